"""StreamBox-HBM's benchmarks (Miao et al., ASPLOS 2019) on their seeded generator
(``grizzly_py.workloads.streambox``), as grizzly-py queries over 1 s tumbling windows.

    grizzly run examples/streambox.py                    # the temporal join (the default query)
    grizzly run examples/streambox.py:windowed_filter    # values >= 900 counted per key
    grizzly run examples/streambox.py:median_per_key     # holistic: a value vector per key
    grizzly explain examples/streambox.py --pipelines

The temporal join pairs the records of two streams with equal keys in the same window (a window
join with Flink semantics); the windowed filter is a selection fused into the windowed per-key
count. The queries are those of the benchmark suite (``grizzly bench streambox``), defined once
in ``grizzly_py.workloads.streambox``.
"""

import grizzly_py as gz
from grizzly_py.workloads import streambox

EVENTS = 4_000_000


def temporal_join(env: gz.StreamEnvironment):
    left, right = streambox.generate_temporal_join(EVENTS)
    return streambox.temporal_join_query(env, left, right)


def _benchmark(name: str):
    def query(env: gz.StreamEnvironment):
        return streambox.streambox_query(env, streambox.generate_streambox(EVENTS), name)
    query.__doc__ = f"StreamBox-HBM {name}"
    return query


windowed_filter = _benchmark("windowed-filter")
sum_per_key = _benchmark("sum-per-key")
median_per_key = _benchmark("median-per-key")
unique_count_per_key = _benchmark("unique-count-per-key")
avg_all = _benchmark("avg-all")

query = temporal_join
