"""Nexmark Q7 and Q8 with window joins, on the seeded Nexmark generator (grizzly_py.workloads.nexmark).

    grizzly run examples/nexmark_joins.py          # Q8 (the default query)
    grizzly run examples/nexmark_joins.py:q7       # Q7
    grizzly explain examples/nexmark_joins.py --pipelines

The queries are those of the benchmark suite (``grizzly bench nexmark-q7 nexmark-q8``), defined
once in ``grizzly_py.workloads.nexmark``:

Q8, "monitor new users": the persons who opened an auction in the 10-second window in which they
registered: persons join auctions on ``person.id == auction.seller`` in 10 s tumbling windows,
then one row per person and window (with the number of auctions). The join's results carry
event time ``window_end - 1``, so the tumbling window after the join is the same 10 s window.

Q7, "highest bid": the bids whose price is the highest of their 10 s window: the bid stream joins
its own per-window maximum (``window_all(...).aggregate(max)``) on ``price == maxprice`` in the
same 10 s tumbling windows. The bid source is read once and feeds both join inputs.
"""

import grizzly_py as gz
from grizzly_py.workloads import nexmark

EVENTS = 5_000_000


def q8(env: gz.StreamEnvironment):
    return nexmark.q8(env, nexmark.generate_persons(EVENTS), nexmark.generate_auctions(EVENTS))


def q7(env: gz.StreamEnvironment):
    return nexmark.q7(env, nexmark.generate_bids(EVENTS))


query = q8
