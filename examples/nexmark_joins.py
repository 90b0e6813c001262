"""Nexmark Q7 and Q8 with window joins, on the seeded Nexmark generator (grizzly_py.workloads.nexmark).

    grizzly run examples/nexmark_joins.py          # Q8 (the default query)
    grizzly run examples/nexmark_joins.py:q7       # Q7
    grizzly explain examples/nexmark_joins.py --pipelines

Q8, "monitor new users": the persons who opened an auction in the 10-second window in which they
registered: persons join auctions on ``person.id == auction.seller`` in 10 s tumbling windows,
then one row per person and window (with the number of auctions). The join's results carry
event time ``window_end - 1``, so the tumbling window after the join is the same 10 s window.

Q7, "highest bid": the bids whose price is the highest of their 10 s window: the bid stream joins
its own per-window maximum (``window_all(...).aggregate(max)``) on ``price == maxprice`` in the
same 10 s tumbling windows. The bid source is read once and feeds both join inputs.
"""

import grizzly_py as gz
from grizzly_py import Time, agg
from grizzly_py.windows import TumblingEventTimeWindows
from grizzly_py.workloads.nexmark import (Q7_WINDOW_MS, Q8_WINDOW_MS, generate_auctions, generate_bids,
                                          generate_persons)

EVENTS = 5_000_000


def q8(env: gz.StreamEnvironment):
    window = TumblingEventTimeWindows.of(Time.milliseconds(Q8_WINDOW_MS))
    persons = env.from_arrow(generate_persons(EVENTS), timestamp="dateTime").select("id", "name", "dateTime")
    auctions = env.from_arrow(generate_auctions(EVENTS), timestamp="dateTime").select("seller", "dateTime")
    sellers = persons.join(auctions).where("id").equal_to("seller").window(window)
    return (sellers.key_by("id", "name")
            .window(window)
            .aggregate(auctions=agg.count()))


def q7(env: gz.StreamEnvironment):
    window = TumblingEventTimeWindows.of(Time.milliseconds(Q7_WINDOW_MS))
    bids = env.from_arrow(generate_bids(EVENTS), timestamp="dateTime")
    highest = bids.window_all(window).aggregate(maxprice=agg.max("price")).select("maxprice")
    return (bids.select("auction", "bidder", "price", "dateTime")
            .join(highest).where("price").equal_to("maxprice").window(window)
            .select("window_end", "auction", "bidder", "price", "dateTime"))


query = q8
