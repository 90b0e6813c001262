"""The Yahoo Streaming Benchmark query on the embedded engine (the README's demo).

    grizzly run examples/ysb.py              # result and throughput
    grizzly explain examples/ysb.py --ir     # the fused, generated LLVM IR

30 million ad events (1M per simulated second, 10,000 campaigns) from a seeded generator; keep the
views, count them per campaign in 10-second tumbling event-time windows.
"""

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.windows import TumblingEventTimeWindows
from grizzly_py.workloads.ysb import generate_ysb

ROWS = 30_000_000


def query(env: gz.StreamEnvironment):
    events = env.from_arrow(generate_ysb(ROWS, seed=42), timestamp="event_time")
    return (events
            .filter(col("event_type") == "view")
            .key_by("campaign_id")
            .window(TumblingEventTimeWindows.of(Time.seconds(10)))
            .aggregate(views=agg.count()))
