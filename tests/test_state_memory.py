"""The state-memory limit (``engine/state_memory.py``) measures every kind of window and join state.

For each kind whose memory sits outside the hash tables (session nodes, a sliding count window's
pane rings, value vectors of holistic aggregates in session and count windows, a join's ref
vectors and session nodes, sort grouping's key/pointer arrays and the sort-merge join's runs, the
interned strings of string keys in windows and joins), a job whose state sits mostly in that
structure (besides, for joins, the input batches kept):

- fails with ``StateMemoryLimitError`` naming its pipeline when the limit lies between what its
  tables (and a join's kept batches) take and what it holds, at parallelism 1 and 2;
- succeeds under a limit above what it holds;
- and, measured directly, holds at least the bytes that structure must take (so the first test
  cannot pass on the tables alone).
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg
from grizzly_py.engine.local import QueryRun
from grizzly_py.engine.state_memory import StateMemoryLimitError, state_bytes
from grizzly_py.plan import Query, SinkSpec
from grizzly_py.windows import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows

N = 100_000          # records per input
NEVER = 10 ** 12     # an out-of-orderness bound that keeps every window open until the input ends


def _stream(env, n=N, keys=1, value_seed=0, step=10, batches=10):
    """``n`` records, ``step`` ms apart, keys ``i % keys``, one batch per round (the limit is
    checked between rounds), a watermark that fires nothing before the end."""
    rng = np.random.default_rng(value_seed)
    table = pa.table({"ts": np.arange(n, dtype=np.int64) * step, "k": np.arange(n, dtype=np.int64) % keys,
                      "v": rng.integers(0, 1 << 40, n)})
    return env.from_arrow(table.to_batches(max_chunksize=n // batches), timestamp="ts",
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(NEVER)))


def _session(env):      # one key, every record its own session (gap 5 ms, records 10 ms apart): N nodes
    return _stream(env).key_by("k").window(EventTimeSessionWindows.with_gap(Time.milliseconds(5))).aggregate(
        c=agg.count(), s=agg.sum("v"))


def _session_holistic(env):  # one key, one session of N records: its median's vector
    return _stream(env).key_by("k").window(EventTimeSessionWindows.with_gap(Time.seconds(1))).aggregate(
        m=agg.median("v"))


def _session_top_k(env):  # the same with top_k: the vector keeps every value until the session fires
    return _stream(env).key_by("k").window(EventTimeSessionWindows.with_gap(Time.seconds(1))).aggregate(
        t=agg.top_k("v", 3))


def _count_holistic(env):  # one key, one count window of N records (never complete): its vector
    return _stream(env).key_by("k").count_window(10 * N).aggregate(d=agg.count_distinct("v"))


def _sliding_count(env):  # 100 keys, windows of 500 records sliding by 1: a ring of 500 panes per key
    return _stream(env, keys=100).key_by("k").count_window(500, 1).aggregate(s=agg.sum("v"), c=agg.count())


def _sliding_count_holistic(env):  # as above, and every pane keeps a vector of its value
    return _stream(env, keys=100).key_by("k").count_window(500, 1).aggregate(m=agg.median("v"))


def _window_join(env):  # one window, 4 records per key and side: N refs per side in the entries' vectors
    return _stream(env, keys=N // 4).join(_stream(env, keys=N // 4, value_seed=1)).where("k").equal_to("k").window(
        TumblingEventTimeWindows.of(Time.milliseconds(10 * N)))


def _interval_join(env):  # 4 records per key and side, nothing expires: (ref, time) per record in vectors
    return _stream(env, keys=N // 4).interval_join(_stream(env, keys=N // 4, value_seed=1)).where("k").equal_to("k").between(
        Time.milliseconds(-1), Time.milliseconds(0))


def _session_join(env):  # one key, sessions of one record per side: a node per record pair
    return _stream(env, n=N // 4).join(_stream(env, n=N // 4, value_seed=1)).where("k").equal_to("k").window(
        EventTimeSessionWindows.with_gap(Time.milliseconds(5)))


def _sort_window(env):  # grouping="sort": N rows in the key/pointer array of one pane
    return _stream(env, keys=1000).key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(10 * N))).aggregate(
        c=agg.count(), s=agg.sum("v"))


def _sort_sliding(env):  # grouping="sort", sliding: rows in many panes
    return _stream(env, keys=1000).key_by("k").window(
        SlidingEventTimeWindows.of(Time.milliseconds(10 * N), Time.milliseconds(N))).aggregate(m=agg.median("v"))


def _sort_merge_join(env):  # grouping="sort": {key, ref} rows of each side's runs
    return _stream(env, keys=N // 4).join(_stream(env, keys=N // 4, value_seed=1)).where("k").equal_to("k").window(
        TumblingEventTimeWindows.of(Time.milliseconds(10 * N)))


STRING_KEYS, STRING_BYTES = 10_000, 1024


def _strings(env, value_seed=0):
    """``STRING_KEYS`` records 10 ms apart, each with a key of its own: a string of
    ``STRING_BYTES``; one batch per round, and a watermark that fires nothing before the end."""
    rng = np.random.default_rng(value_seed)
    table = pa.table({"ts": np.arange(STRING_KEYS, dtype=np.int64) * 10,
                      "s": [f"{i:0{STRING_BYTES}d}" for i in range(STRING_KEYS)],
                      "v": rng.integers(0, 1 << 40, STRING_KEYS)})
    return env.from_arrow(table.to_batches(max_chunksize=STRING_KEYS // 10), timestamp="ts",
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(NEVER)))


def _string_keys(env):  # one window: the interned strings of its keys
    return _strings(env).key_by("s").window(TumblingEventTimeWindows.of(Time.milliseconds(10 * N))).aggregate(
        c=agg.count())


def _string_join(env):  # one window: the strings of both sides' keys (one interner)
    return _strings(env).join(_strings(env, value_seed=1)).where("s").equal_to("s").window(
        TumblingEventTimeWindows.of(Time.milliseconds(10 * N)))


# name: (build, grouping, the kind of pipeline the error names, the least bytes the structure takes at the end)
KINDS = {
    "session_nodes": (_session, "hash", "window", N * (24 + 16)),
    "session_vectors": (_session_holistic, "hash", "window", N * 8),
    "session_top_k_vectors": (_session_top_k, "hash", "window", N * 8),
    "count_vectors": (_count_holistic, "hash", "window", N * 8),
    "sliding_count_rings": (_sliding_count, "hash", "window", 100 * 500 * 16),
    "sliding_count_ring_vectors": (_sliding_count_holistic, "hash", "window", 100 * 500 * (24 + 8)),
    "window_join_refs": (_window_join, "hash", "join", 2 * N * 8),
    "interval_join_refs": (_interval_join, "hash", "join", 2 * N * 16),
    "session_join_nodes": (_session_join, "hash", "join", N // 4 * 88),
    "sort_window": (_sort_window, "sort", "window", N * 8 * 4),
    "sort_sliding": (_sort_sliding, "sort", "window", N * 8 * 4),
    "sort_merge_join": (_sort_merge_join, "sort", "join", 2 * N * 8 * 2),
    "string_keys": (_string_keys, "hash", "window", STRING_KEYS * STRING_BYTES),
    "string_keys_sort": (_string_keys, "sort", "window", STRING_KEYS * STRING_BYTES),
    "string_join": (_string_join, "hash", "join", STRING_KEYS * STRING_BYTES),
}


def _kernel_after_input(build, grouping):
    """The stateful kernel of ``build``'s job after all its input, before the end fires anything."""
    stream = build(gz.StreamEnvironment())
    run = QueryRun(Query(stream.node, SinkSpec("collect", "out")), grouping=grouping)
    iterators = [(s, iter(s.batches())) for s in run.sources]
    for _ in itertools.count():
        fed = False
        for source, it in iterators:
            batch = next(it, None)
            if batch is not None:
                run.feed(batch, source)
                fed = True
        if not fed:
            break
    run.flush()  # (a tumbling window groups batches per round of tasks)
    kernels = [r.kernel for r in run.runs if r.kernel is not None and type(r.kernel).__name__ != "ProjectKernel"]
    assert len(kernels) == 1
    return run, kernels[0]


@pytest.fixture(scope="module")
def measured():
    """state_bytes of every kind's kernel after its input, and the part of it the tables, the
    window directory and a join's kept batches take (what the limit measured before)."""
    out = {}
    for name, (build, grouping, _, _) in KINDS.items():
        run, kernel = _kernel_after_input(build, grouping)
        try:
            out[name] = (state_bytes(kernel), _tables_and_batches(kernel), kernel.pipeline.id
                         if hasattr(kernel, "pipeline") else kernel.gen.pipeline.id)
        finally:
            run.close()
    return out


def _tables_and_batches(kernel) -> int:
    from grizzly_py.codegen import abi
    from grizzly_py.engine.join_kernel import JoinKernel
    from grizzly_py.engine.state_memory import _table
    if isinstance(kernel, JoinKernel):
        total = sum(b.nbytes for store in kernel.stores for _, b in store.batches)
        if type(kernel).__name__ == "SortMergeJoinKernel":
            return total
        shared, entry = kernel.shared, kernel.gen.entry_size
        total += int(shared[abi.J_TABLE + 1]) * entry
        if int(shared[abi.J_DIR + 1]):
            slots = _table(int(shared[abi.J_DIR]), int(shared[abi.J_DIR + 1]), abi.J_SLOT_WORDS)
            total += int(slots[:, 2].sum()) * entry + len(slots) * 8 * abi.J_SLOT_WORDS
        return total
    if kernel.gen.trigger == "kpa":
        return 0
    entry = kernel.gen.grouping.entry_size
    if kernel.gen.trigger == "session":
        entry = 8 * (kernel.gen.grouping.key_words + 2)
    return sum(int(w[:, 2].sum()) * entry + 32 * len(w) for w in (kernel.windows(s) for s in kernel.states))


@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.slow  # the measured fixture runs every kind's job
def test_the_structure_is_measured(name, measured):
    total, tables, _ = measured[name]
    least = KINDS[name][3]
    assert total - tables >= least, f"{name}: {total} bytes measured, {tables} of them tables and batches"


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.slow
def test_over_the_limit_fails_naming_the_pipeline(name, parallelism, measured, every_row_a_morsel):
    """(Rounds of few batches: the limit is checked between them while the windows are open under
    parallelism too.)"""
    build, grouping, kind, _ = KINDS[name]
    total, tables, pipeline = measured[name]
    limit = tables + (total - tables) // 2  # above the tables (and batches), below the whole state
    env = gz.StreamEnvironment(parallelism=parallelism, grouping=grouping, state_memory_limit=limit)
    build(env).collect("out")
    with pytest.raises(StateMemoryLimitError, match=rf"the limit is {limit} bytes; pipeline {pipeline} \({kind}\) of sink 'out'"):
        env.execute()


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.slow
def test_under_the_limit_succeeds(name, parallelism, measured):
    build, grouping, _, _ = KINDS[name]
    total, _, _ = measured[name]
    limit = 2 * total + (1 << 20)
    env = gz.StreamEnvironment(parallelism=parallelism, grouping=grouping, state_memory_limit=limit)
    build(env).collect("out")
    result = env.execute()
    assert result.metrics["state_memory_limit"] == limit
    assert result["out"].num_rows > 0 or name == "count_vectors"


@pytest.mark.slow
def test_the_error_says_how_much_the_interned_strings_take(measured):
    total, tables, _ = measured["string_keys"]
    env = gz.StreamEnvironment(state_memory_limit=tables + (total - tables) // 2)
    _string_keys(env).collect("out")
    with pytest.raises(StateMemoryLimitError, match=r"window/join state \((\d+) of them interned string keys\)") as e:
        env.execute()
    strings = int(e.value.args[0].split("(")[1].split()[0])
    assert STRING_KEYS * STRING_BYTES <= strings <= total


@pytest.mark.parametrize("parallelism", [1, 2])
def test_strings_of_fired_windows_leave_the_budget(parallelism, every_row_a_morsel):
    """New 1 KB keys in every one of 20 windows: their strings together take ~5 times the limit,
    one window's fit; the fired windows' strings are released, so the job runs to its end."""
    windows, keys = 20, 1000
    i = np.arange(windows * keys)
    table = pa.table({"ts": i.astype(np.int64), "s": [f"{w}:{k:01024d}" for w, k in zip(i // keys, i % keys)]})
    env = gz.StreamEnvironment(parallelism=parallelism, state_memory_limit="5m")
    env.from_arrow(table.to_batches(max_chunksize=keys // 4), timestamp="ts",
                   watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(0))).key_by("s").window(
        TumblingEventTimeWindows.of(Time.milliseconds(keys))).aggregate(c=agg.count()).collect("out")
    out = env.execute()["out"]
    assert out.num_rows == windows * keys and out.column("c").to_pylist() == [1] * (windows * keys)
