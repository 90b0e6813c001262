"""A task's parts in one native call (``engine/task_parts.py``, ``runtime/tasks.ll``).

Grouped tumbling windows run each task's parts (row ranges of several source batches) through
``gz_run_parts``: at parallelism 1 the watermark moves between the parts inside the call, as the
driver's clock would have moved it between batches. These tests pin what must not change: late
records inside one task, a failed dense-key guard in the middle of a task, and an error's row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.codegen import abi
from grizzly_py.engine import task_parts
from grizzly_py.engine.adaptive import AdaptiveSettings
from grizzly_py.engine.parallel import CostModel

i64 = pa.int64()


@pytest.fixture
def native_calls(monkeypatch):
    """The number of ``gz_run_parts`` calls and the parts each one had."""
    calls = []
    real = task_parts.PartsTable.run

    def counted(self, *args, **kwargs):
        calls.append(len(self.table))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(task_parts.PartsTable, "run", counted)
    return calls


def test_chained_watermark_rules():
    assert task_parts.chained_watermark(5, abi.INT64_MIN, 1) == 5  # no event time read yet
    assert task_parts.chained_watermark(5, 100, 1) == 99
    assert task_parts.chained_watermark(500, 100, 1) == 500  # a watermark never goes back
    assert task_parts.chained_watermark(abi.INT64_MIN, abi.INT64_MIN + 3, 10) == abi.INT64_MIN  # saturates


def _compare(build, parallelism=1, adaptive=False):
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=parallelism, adaptive=adaptive)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]
    return result.metrics


def test_late_records_inside_one_call_at_parallelism_1(native_calls):
    """Every batch is one part of a single call: a record is late against the watermark its
    batch's predecessors reached inside the call, not the one the call started with."""
    data = {"ts": pa.array([100, 5, 105, 95, 50, 200, 150, 140], i64), "k": pa.array([1, 1, 2, 2, 1, 1, 2, 1], i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[1, 2, 2, 1, 2], bound=10).key_by("k").window(tumbling(20)) \
            .aggregate(n=agg.count(), s=agg.sum(col("ts")))
    metrics = _compare(build)
    # late: ts 5 (after 100: watermark 89), 50 (after 105: 94), 150 and 140 (after 200: 189);
    # not 95 (its window [80, 100) is still open at 94)
    assert metrics["late_records"] == 4
    assert native_calls == [5]


@settings(max_examples=60, deadline=None)
@given(ts=st.lists(st.integers(-50, 400), min_size=1, max_size=60), bound=st.integers(0, 40),
       rows=st.integers(1, 9), size=st.sampled_from([7, 20, 50]))
def test_chained_watermarks_equal_the_reference(ts, bound, rows, size):
    keys = [t % 3 for t in ts]
    sizes = [rows] * (len(ts) // rows) + ([len(ts) % rows] if len(ts) % rows else [])

    def build(env):
        return arrow_stream(env, {"ts": pa.array(ts, i64), "k": pa.array(keys, i64)}, sizes=sizes, bound=bound) \
            .key_by("k").window(tumbling(size)).aggregate(n=agg.count(), lo=agg.min(col("ts")))
    _compare(build)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_failed_guard_in_the_middle_of_a_call(monkeypatch, native_calls, parallelism):
    """Dense keys 0-4 speculated; a batch in the middle of a later task brings key 40: that part
    stops at the key, the generic variant finishes it, the parts after it run one by one."""
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 30)
    monkeypatch.setattr(CostModel, "morsel_count", lambda self, rows, workers: workers)
    keys = [k % 5 for k in range(120)]
    keys[97] = 40
    data = {"ts": pa.array(range(120), i64), "k": pa.array(keys, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[6] * 20).key_by("k").window(tumbling(25)).aggregate(n=agg.count())
    adaptive = AdaptiveSettings(generic_records=2, profile_records=6, profile_sample=1, wait_for_compile=True,
                                counters="none")
    metrics = _compare(build, parallelism, adaptive)
    pipeline = metrics["queries"][0]["pipelines"][0]
    reasons = [h["reason"] for h in pipeline["variant_history"] if h["reason"].startswith("deoptimized")]
    assert "outside the dense range" in reasons[0] and reasons[0].endswith("batch 16, row 1")  # row 97
    assert sum(h["records"] for h in pipeline["variant_history"]) == 120  # every record counted once
    assert any(n > 1 for n in native_calls)  # the optimized variant ran tasks of several parts


@pytest.mark.parametrize("bad_key_at", [None, 70])
def test_a_task_goes_to_one_call_once_the_controller_settles(monkeypatch, native_calls, bad_key_at):
    """One task holds every batch: its first batches run one by one through the early stages;
    once the optimized variant runs and one part has moved the block to its dense placement,
    the rest go in one call. A key outside the dense range later in that call stops it there
    (the generic variant finishes that part, the rest run one by one again). Every record is
    counted once; the results equal the reference."""
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 10**9)
    keys = [k % 5 for k in range(160)]
    if bad_key_at is not None:
        keys[bad_key_at] = 40
    data = {"ts": pa.array(range(160), i64), "k": pa.array(keys, i64)}

    def build(env):
        return arrow_stream(env, data, sizes=[5] * 32).key_by("k").window(tumbling(50)).aggregate(n=agg.count())
    adaptive = AdaptiveSettings(generic_records=5, profile_records=10, profile_sample=1, wait_for_compile=True,
                                counters="none")
    metrics = _compare(build, 1, adaptive)
    history = metrics["queries"][0]["pipelines"][0]["variant_history"]
    assert sum(h["records"] for h in history) == 160
    assert [h["stage"] for h in history[:3]] == ["generic", "instrumented", "optimized"]
    assert history[2]["at_record"] == 15
    # one by one: the generic part, two instrumented ones, the optimized one that placed the block
    assert native_calls == [32 - 4]
    if bad_key_at is not None:
        assert history[3]["reason"].startswith("deoptimized: a key outside the dense range") \
            and history[3]["at_record"] == bad_key_at


def test_an_error_names_its_source_row_inside_a_call(native_calls):
    """A dictionary index outside its dictionary in the fourth batch of one call."""
    dictionary = pa.array(["a", "b"])

    def batch(values, start):
        d = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.string()), len(values),
                                            [None, pa.py_buffer(np.array(values, dtype="i4").tobytes())], dictionary)
        return pa.record_batch([pa.array(range(start, start + len(values)), i64), d], names=["ts", "k"])
    batches = [batch([0, 1], 0), batch([1, 1], 2), batch([0, 0, 1], 4), batch([1, 0, 9, 0], 7)]
    env = gz.StreamEnvironment(parallelism=1, adaptive=False)
    q = env.from_arrow(batches, timestamp="ts").filter(col("k") == "a").window_all(tumbling(5)).aggregate(n=agg.count())
    with pytest.raises(gz.BadInputError, match="dictionary index 9 is outside the dictionary of 2 values in batch 3, row 2"):
        q.execute_and_collect()
    assert native_calls == [4]


def test_round_bases_wait_for_earlier_tasks_and_name_the_failure():
    # task k reads task k-1's rows and waits for tasks 1..k-1's findings; a read that fails
    # fails the tasks after it with that error as the cause, not a bare one of their own
    import threading

    from grizzly_py.engine.task_parts import RoundBases

    class Table:
        def __init__(self, value):
            self.value = value

        def column_max(self, slot):
            if isinstance(self.value, Exception):
                raise self.value
            return self.value

    class Plan:
        def __init__(self, value):
            self.table = Table(value)

    bases = RoundBases([Plan(30), Plan(None), Plan(10), Plan(99)], slot_base=0, to_ms=lambda raw: raw * 2)
    found = {}
    threads = [threading.Thread(target=lambda k=k: found.__setitem__(k, bases.base(k))) for k in (3, 1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert found == {1: 60, 2: 60, 3: 60}  # (task 1's rows: 30 ms raw; task 2 has none; 10 -> 20)

    broken = RoundBases([Plan(5), Plan(ValueError("bad column")), Plan(7)], slot_base=0, to_ms=int)
    assert broken.base(1) == 5
    with pytest.raises(ValueError, match="bad column"):
        broken.base(2)
    with pytest.raises(RuntimeError) as failed:
        broken.base(3)
    assert isinstance(failed.value.__cause__, ValueError)


@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, (1 << 32) - 1)), min_size=1, max_size=40))
def test_row_positions_order_rows_by_batch_then_row(places):
    """A call's first-row position (abi.PARAM_ROW_POSITION) orders every row of the input as its
    (batch number, row) does, whatever the calls' sizes (a batch holds < 2^32 rows)."""
    numbers = np.array([n for n, _ in places], dtype=np.int64)
    rows = np.array([r for _, r in places], dtype=np.int64)
    positions = task_parts.row_positions(numbers, rows)
    assert sorted(range(len(places)), key=lambda i: places[i]) == sorted(range(len(places)), key=lambda i: positions[i])
    assert all(task_parts.row_positions(n, r) == p for (n, r), p in zip(places, positions))


def test_a_parts_table_gives_each_part_its_first_rows_position():
    columns = np.zeros((3, abi.COLUMN_SLOTS), dtype=np.uint64)
    params = np.zeros((3, abi.PARAM_FIRST_DICT_CODE), dtype=np.int64)
    table = task_parts.PartsTable.of_rows(columns, params, [4, 4, 7], [0, 6, 2], [6, 4, 3], [0, 0, 0], 0, keep=None)
    assert list(table.params[:, abi.PARAM_ROW_POSITION]) == [(4 << 32) + 0, (4 << 32) + 6, (7 << 32) + 2]
