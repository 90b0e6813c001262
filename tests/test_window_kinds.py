"""Window kinds: every assigner's ``kind`` is one ``WindowKind`` (``grizzly_py/windows.py``) that
every layer asks, instead of comparing names.

- each assigner class has a registered kind, and the kind's capabilities agree with what the
  layers do with it (a lowering rule for every kind, sort grouping and shared state only where
  the kind allows them, window columns for every clock but the count);
- a kind survives pickling (plans ship to Spark's workers) and compares with kinds only:
  comparing it with a name is a ``TypeError``, so a check written against the old strings
  fails loudly instead of being silently false.
"""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg
from grizzly_py.codegen.rules import RULES
from grizzly_py.codegen.shared_window import shared_state_unsupported
from grizzly_py.codegen.sort_grouping import sort_unsupported
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import (WINDOW_KINDS, CountWindows, CumulativeEventTimeWindows, EventTimeSessionWindows,
                                RunningWindow, SlidingEventTimeWindows,
                                SlidingProcessingTimeWindows, TumblingEventTimeWindows,
                                TumblingProcessingTimeWindows, WindowKind)

ms = Time.milliseconds
ASSIGNERS = {
    "tumbling": lambda s: s.window(TumblingEventTimeWindows.of(ms(10))),
    "sliding": lambda s: s.window(SlidingEventTimeWindows.of(ms(10), ms(5))),
    "session": lambda s: s.window(EventTimeSessionWindows.with_gap(ms(5))),
    "tumbling_processing": lambda s: s.window(TumblingProcessingTimeWindows.of(ms(10))),
    "sliding_processing": lambda s: s.window(SlidingProcessingTimeWindows.of(ms(10), ms(5))),
    "count": lambda s: s.count_window(3),
    "cumulative": lambda s: s.window(CumulativeEventTimeWindows.of(ms(10), ms(5))),
    "running": lambda s: s,  # keyed.aggregate without a window: a running aggregate
}


def _pipeline(name: str):
    env = gz.StreamEnvironment()
    keyed = env.from_arrow(pa.table({"ts": [1, 2, 3], "k": [1, 2, 1]}), timestamp="ts").key_by("k")
    q = ASSIGNERS[name](keyed).aggregate(n=agg.count())
    return q, build_physical_plan(Query(q.node)).pipelines[0]


def test_every_assigner_has_a_registered_kind():
    classes = [TumblingEventTimeWindows, SlidingEventTimeWindows, EventTimeSessionWindows,
               TumblingProcessingTimeWindows, SlidingProcessingTimeWindows, CountWindows, CumulativeEventTimeWindows,
               RunningWindow]
    assert sorted(c.kind.name for c in classes) == sorted(k.name for k in WINDOW_KINDS)
    assert sorted(ASSIGNERS) == sorted(k.name for k in WINDOW_KINDS)


@pytest.mark.parametrize("name", sorted(ASSIGNERS))
def test_capabilities_agree_with_the_layers(name):
    q, pipeline = _pipeline(name)
    kind = pipeline.terminal.assigner.kind
    assert sum(kind in rule.window_kinds for rule in RULES) == 1, "one lowering rule per kind"
    assert (sort_unsupported(pipeline) is None) == kind.sort_grouping
    if not kind.shared_state:
        assert shared_state_unsupported(pipeline) is not None
    names = q.schema.names
    assert ("window_start" in names and "window_end" in names) == kind.window_columns
    assert kind.clock in ("event", "processing", "count")
    assert kind.spark in ("partials", "keyed", "one_task")


def test_kinds_pickle_and_compare_with_kinds_only():
    for kind in WINDOW_KINDS:
        assert pickle.loads(pickle.dumps(kind)) == kind
        assert hash(pickle.loads(pickle.dumps(kind))) == hash(kind)
        with pytest.raises(TypeError, match="capabilities"):
            _ = kind == kind.name
    assert WINDOW_KINDS[0] != WINDOW_KINDS[1]
    assert isinstance(TumblingEventTimeWindows.of(ms(1)).kind, WindowKind)
