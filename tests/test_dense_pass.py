"""The optimized variant's branch-free pass over densely placed keys (``codegen/dense_pass.py``):
blocks that lie in the open window with every key in the dense range run as one pass that updates
``entry[key - lo]`` with the filters' verdict as each row's validity (``count += keep`` for YSB),
and the entries that pass reached first are claimed after the native call. Results, record
counts and the window state (tags, keys, table sizes) must be exactly what the general path gives.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.codegen.module import CodegenOptions, generate_pipeline
from grizzly_py.codegen.specialize import Specialization, simd_select_available
from grizzly_py.engine import kernel_table, kernels
from grizzly_py.engine.adaptive import AdaptiveSettings
from grizzly_py.time import Time
from grizzly_py.windows import CumulativeEventTimeWindows, SlidingEventTimeWindows

i64 = pa.int64()


# the vector selection (AVX-512 compress) compiles only where the host has it
SIMD = [False, True] if simd_select_available() else [False]


def dense(lo_shift: int, cap_bits: int, block_rows: int, select: bool = False, simd: bool = False):
    """A specializer that places the profiled keys densely (shifted, so that some keys may fall
    outside the range later) and cuts kernels into blocks of ``block_rows`` rows, so that small
    batches have blocks after their first (the path needs a window opened by an earlier block).
    ``simd``: the kept rows are listed eight at a time (``CodegenOptions.simd_select``)."""
    def specializer(pipeline, profile, base, entry_bytes):
        changes = dict(variant="optimized", filter_mode="predicated", block_rows=block_rows, dense_select=select,
                       simd_select=simd and select)
        if profile.key_min is not None:
            changes["dense_keys"] = (profile.key_min + lo_shift, 1 << cap_bits)
        return Specialization(replace(base, **changes), ("forced by the test",))
    return specializer


def adaptive(specializer, **overrides) -> AdaptiveSettings:
    base = dict(generic_records=0, profile_records=4, profile_sample=1, wait_for_compile=True, counters="none",
                specializer=specializer)
    base.update(overrides)
    return AdaptiveSettings(**base)


def counting_query(data: dict, sizes: list[int], window, bound: int, aggregates: dict | None = None,
                   lateness: int = 0):
    """Rows whose kind is 1 (or null) are filtered out; ``build.data``: the input."""
    def build(env):
        stream = arrow_stream(env, data, sizes=sizes, bound=bound).filter(col("kind") != 1)
        windowed = stream.key_by("k").window(window)
        if lateness:
            windowed = windowed.allowed_lateness(Time.milliseconds(lateness))
        return windowed.aggregate(**(aggregates or {"n": agg.count()}))
    build.data = data
    return build


def run(build, settings_: AdaptiveSettings, parallelism: int = 1):
    env = gz.StreamEnvironment(parallelism=parallelism, adaptive=settings_)
    build(env).collect("out")
    result = env.execute()
    return result["out"], result.metrics


def check(build, settings_: AdaptiveSettings, parallelism: int = 1) -> dict:
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    except AggregateOverflowError:  # (int sums of values near 2**62): the compiled run raises it too
        with pytest.raises(AggregateOverflowError):
            run(build, settings_, parallelism)
        return {}
    actual, metrics = run(build, settings_, parallelism)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"], "late record counts differ"
    assert metrics["records_in"] == expected_metrics["records_in"]
    kinds = build.data["kind"].to_pylist()
    assert metrics["filtered_records"] == sum(k is None or k == 1 for k in kinds), "filtered counts differ"
    return metrics


@st.composite
def streams(draw):
    """Event times mostly in order with some disorder, keys in a small range with an occasional
    far key (outside any dense range: the general path stops there), kinds to filter on (and
    count), an occasional null among them."""
    rows = draw(st.integers(1, 120))
    ts = np.cumsum(draw(st.lists(st.integers(0, 4), min_size=rows, max_size=rows))).tolist()
    for i in draw(st.lists(st.integers(0, rows - 1), max_size=4)):  # late or out-of-order rows
        ts[i] = max(0, ts[i] - draw(st.integers(1, 60)))
    keys = draw(st.lists(st.integers(0, 9), min_size=rows, max_size=rows))
    for i in draw(st.lists(st.integers(0, rows - 1), max_size=2)):
        keys[i] = draw(st.sampled_from([-(10**12), 10**12]))
    kinds = draw(st.lists(st.integers(0, 2), min_size=rows, max_size=rows))
    for i in draw(st.lists(st.integers(0, rows - 1), max_size=2)):  # batches with nulls: the other kernel
        kinds[i] = None
    cuts = sorted(set(draw(st.lists(st.integers(1, rows - 1), max_size=6)))) if rows > 1 else []
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [rows])]
    values = draw(st.lists(st.integers(-(2**62), 2**62) | st.integers(-5, 5), min_size=rows, max_size=rows))
    data = {"ts": pa.array(ts, i64), "k": pa.array(keys, i64), "kind": pa.array(kinds, i64),
            "v": pa.array(values, i64), "x": pa.array([v / 7.0 for v in values], pa.float64())}
    return data, sizes


AGGREGATE_SETS = {
    "count": None,
    "two counts": {"n": agg.count(), "m": agg.count(col("kind"))},
    "sum, min, max of ints": {"s": agg.sum(col("v")), "lo": agg.min(col("v")), "hi": agg.max(col("v"))},
    "avg, sum, stddev of floats": {"a": agg.avg(col("x")), "s": agg.sum(col("x")), "sd": agg.stddev_samp(col("x"))},
    "count, avg and var of ints": {"n": agg.count(), "a": agg.avg(col("v")), "vp": agg.var_pop(col("v"))},
}


WINDOWS = {  # (assigner, allowed lateness ms)
    "tumbling": (tumbling(20), 0),
    "sliding": (SlidingEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(10)), 0),
    "sliding with an offset": (SlidingEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(10),
                                                          Time.milliseconds(-3)), 0),
    "cumulative": (CumulativeEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(5)), 0),
    # kept windows: a pane whose keys are noted for a second firing takes the general path
    "tumbling, allowed lateness": (tumbling(20), 15),
    "cumulative, allowed lateness": (CumulativeEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(5)), 25),
}


@settings(max_examples=80, deadline=None)
@given(stream=streams(), window=st.sampled_from(sorted(WINDOWS)), bound=st.integers(0, 20),
       lo_shift=st.integers(-2, 2), cap_bits=st.integers(2, 5), block_rows=st.sampled_from([1, 2, 3, 5, 8, 16, 4096]),
       aggregates=st.sampled_from(sorted(AGGREGATE_SETS)), parallelism=st.integers(1, 3), select=st.booleans(),
       simd=st.sampled_from(SIMD))
@pytest.mark.slow
def test_the_branch_free_pass_equals_the_reference(stream, window, bound, lo_shift, cap_bits, block_rows,
                                                   aggregates, parallelism, select, simd):
    """Every form of the pass (one loop over every row, or the kept rows listed first:
    ``dense_select``, one row or eight at a time: ``simd_select``) gives the reference's
    windows, late and filtered counts."""
    data, sizes = stream
    w, lateness = WINDOWS[window]
    check(counting_query(data, sizes, w, bound, AGGREGATE_SETS[aggregates], lateness),
          adaptive(dense(lo_shift, cap_bits, block_rows, select, simd)), parallelism)


@pytest.mark.parametrize("block_rows", [1, 2, 4096])
def test_a_kept_windows_late_rows_take_the_general_path(block_rows):
    """With allowed lateness, late rows of a fired window (all in one pane, blocks after the
    first in the open pane) must note their keys for the window's next firing: the pass leaves
    such a pane to the general path."""
    late = [5 + i % 10 for i in range(12)]
    data = {"ts": pa.array(list(range(20)) + [25] + late, i64), "k": pa.array([i % 4 for i in range(33)], i64),
            "kind": pa.array([0] * 33, i64), "v": pa.array(range(33), i64), "x": pa.array([0.5] * 33)}
    build = counting_query(data, [20, 1, 12], tumbling(20), 0, {"n": agg.count(), "s": agg.sum(col("v"))}, 15)
    check(build, adaptive(dense(0, 3, block_rows)))


def _in_order(rows: int = 4000, keys: int = 40, batch: int = 500) -> tuple[dict, list[int]]:
    rng = np.random.default_rng(3)
    data = {"ts": pa.array(np.arange(rows), i64), "k": pa.array(rng.integers(0, keys, rows), i64),
            "kind": pa.array(rng.integers(0, 3, rows), i64), "x": pa.array(rng.normal(size=rows))}
    return data, [batch] * (rows // batch)


@pytest.mark.parametrize("select", [False, True])
@pytest.mark.parametrize("window, parallelism", [("tumbling", 1), ("sliding", 1), ("tumbling", 2)])
def test_the_pass_runs_and_its_entries_are_claimed_after_each_call(monkeypatch, window, parallelism, select):
    """Without the claim after each native call, the keys that the branch-free pass reached first
    have no tag: they would be missing from the results. So the pass ran (in single batches and,
    at parallelism 2, in tasks of parts run in one native call), and the claim is what makes its
    entries real; with it, the results equal the reference."""
    data, sizes = _in_order(rows=16_000, batch=1000)
    w = tumbling(1000) if window == "tumbling" else SlidingEventTimeWindows.of(Time.milliseconds(1000),
                                                                                Time.milliseconds(500))
    build = counting_query(data, sizes, w, 0)
    settings_ = adaptive(dense(0, 6, 64, select), profile_workers=parallelism)
    planned = []
    real_run_planned = kernels.Kernel.run_planned

    def run_planned(self, plan):
        planned.append(plan.variant is not None and plan.unit == plan.variant.gen.claim_unit)
        return real_run_planned(self, plan)
    monkeypatch.setattr(kernels.Kernel, "run_planned", run_planned)
    check(build, settings_, parallelism)
    if parallelism > 1:
        assert any(planned), "no task of parts ran the kernel with the pass"
    monkeypatch.setattr(kernels.Kernel, "_claim_entries", lambda self, gen, unit, state: None)
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    actual, _ = run(build, settings_, parallelism)
    assert actual.num_rows < expected.num_rows


@pytest.mark.parametrize("select", [False, True])
@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_the_claim_reads_the_panes_the_pass_ran_in(monkeypatch, select, parallelism):
    """The pass lowers the state's unclaimed word to the start of each pane it runs in, and the
    claim reads only the tables from there on. Each batch has two blocks in a later pane, then
    two of an earlier one and two of the pane between (out of order, within the watermark's
    bound); a pane's first block takes the general path (it opens the pane), its second runs
    the pass over keys no block reached before. A claim that read only the pane of the last
    pass, or of the first, would leave keys untagged. The words the claims saw are pane starts."""
    pane, block = 50, 64
    rng = np.random.default_rng(11)
    ts, keys = [], []
    for b in range(12):
        for p in (b + 2, b, b + 1):
            ts += (p * pane + rng.integers(0, pane, 2 * block)).tolist()
            keys += [i % 8 for i in range(block)] + [8 + i % 8 for i in range(block)]
    rows = len(ts)
    data = {"ts": pa.array(ts, i64), "k": pa.array(keys, i64), "kind": pa.array(rng.integers(0, 3, rows), i64),
            "v": pa.array(np.arange(rows), i64), "x": pa.array(rng.normal(size=rows))}
    w = SlidingEventTimeWindows.of(Time.milliseconds(4 * pane), Time.milliseconds(pane))
    build = counting_query(data, [6 * block] * 12, w, 4 * pane)
    seen = []
    real = kernels.Kernel._claim_entries

    def claim(self, gen, unit, state):
        if gen.claim_unit == unit:
            seen.append(int(state[kernels.abi.STATE_UNCLAIMED]))
        return real(self, gen, unit, state)
    monkeypatch.setattr(kernels.Kernel, "_claim_entries", claim)
    check(build, adaptive(dense(0, 5, block, select), profile_workers=parallelism), parallelism)
    ran = [word for word in seen if word != kernels.abi.INT64_MAX]
    assert ran, "the dense pass never ran"
    assert all(word % pane == 0 and 0 <= word <= 13 * pane for word in ran)
    assert min(ran) < max(ran), "every pass ran in one pane"


def _window_pipeline(build):
    from grizzly_py.physical.pipelines import build_physical_plan
    from grizzly_py.plan import Query
    (pipeline,) = build_physical_plan(Query(build(gz.StreamEnvironment()).node)).pipelines
    return pipeline


def test_claimed_state_is_the_general_paths_state():
    """The window tables after the branch-free pass and its claims hold the same entries (tag,
    key, aggregates) at the same places, with the same table sizes, as after the general path
    alone."""
    from grizzly_py.codegen import abi
    from grizzly_py.engine.state_snapshot import live_entries
    data, sizes = _in_order(rows=3000, batch=3000)
    aggregates = {"n": agg.count(), "s": agg.sum(col("x")), "lo": agg.min(col("kind")), "sd": agg.stddev_pop(col("x"))}
    pipeline = _window_pipeline(counting_query(data, sizes, tumbling(1000), 0, aggregates))
    batch = pa.record_batch(data)
    tables = []
    # blocks of 64 rows: the pass runs from the second block on (in either form: dense_select
    # lists the kept rows first); 3000 rows are one block of 4096: it never runs
    for block_rows, select in ((64, False), (64, True), (4096, False)):
        gen = generate_pipeline(pipeline, CodegenOptions(variant="optimized", dense_keys=(0, 64),
                                                         block_rows=block_rows, dense_select=select))
        assert ("fp.loop:" in gen.units["process_nonnull"].ir) and gen.claim_unit == "process_nonnull"
        assert ("fp.upd:" in gen.units["process_nonnull"].ir) == select
        kernel = kernel_table.make_kernel(gen, "arrow#0")
        assert kernel.run(batch, abi.INT64_MIN, 0) == 0
        words = gen.grouping.entry_size // 8
        tables.append([(int(start), int(size), live_entries(int(entries), int(cap), words))
                       for start, entries, cap, size in kernel.windows(kernel.states[0])])
    *passes, general = tables
    for fast in passes:
        assert [(s, n) for s, n, _ in fast] == [(s, n) for s, n, _ in general] == [(0, 40), (1000, 40), (2000, 40)]
        for (_, _, a), (_, _, b) in zip(fast, general):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("aggregates, has_path", [
    ({"n": agg.count()}, True),
    ({"n": agg.count(), "m": agg.count(col("kind"))}, True),
    ({"n": agg.count(), "s": agg.sum(col("kind")), "hi": agg.max(col("kind"))}, True),
    ({"n": agg.count(), "m": agg.median(col("kind"))}, False),       # a holistic aggregate branches
    ({"n": agg.count(), "s": agg.sum(col("kind") * 2)}, False),     # a computed argument
    ({"n": agg.count(), "m": agg.count(col("kind") == 1)}, False),  # (its checks run in the general path)
])
def test_which_kernels_have_the_pass(aggregates, has_path):
    """The no-nulls kernel of a dense window whose aggregates update branch-free, over plain
    columns, has the pass; the kernel for batches with nulls never has it (a null key or
    argument needs the general path)."""
    data, sizes = _in_order(rows=10, batch=10)
    pipeline = _window_pipeline(counting_query(data, sizes, tumbling(1000), 0, aggregates))
    gen = generate_pipeline(pipeline, CodegenOptions(variant="optimized", dense_keys=(0, 64)))
    assert ("fp.loop:" in gen.units["process_nonnull"].ir) == has_path
    assert (gen.claim_unit == "process_nonnull") == has_path
    assert "fp.loop:" not in gen.units["process"].ir
    generic = generate_pipeline(pipeline, CodegenOptions(variant="optimized"))  # hashed keys: never
    assert "fp.loop:" not in generic.units["process_nonnull"].ir and generic.claim_unit is None
    big = generate_pipeline(pipeline, CodegenOptions(variant="optimized", dense_keys=(0, 1 << 20)))
    assert "fp.loop:" not in big.units["process_nonnull"].ir  # a claim would scan too much


def _dictionary_kinds(codes, width: int = 4) -> pa.DictionaryArray:
    """Kinds as dictionary indices into ("view", "click", "buy"), taken as they are (no
    validation: an index outside the dictionary stays in the batch)."""
    raw = np.asarray(codes, dtype=f"i{width}").tobytes()
    return pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32() if width == 4 else pa.int8(), pa.string()),
                                           len(codes), [None, pa.py_buffer(raw)], pa.array(["view", "click", "buy"]))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(101, 600), seed=st.integers(0, 2**31), block_rows=st.sampled_from([3, 16, 64]),
       select=st.booleans(), simd=st.sampled_from(SIMD), bad=st.sampled_from([None, 3, -1, 100]), at=st.floats(0, 1),
       width=st.sampled_from([1, 4]))
def test_dictionary_filters_of_the_pass_are_checked(rows, seed, block_rows, select, simd, bad, at, width):
    """A filter on a dictionary column in the pass (row by row, or eight rows at a time):
    results equal the reference, and an index outside the dictionary in any block is reported
    with its batch and row. (The first 100-row batch runs the early stages; the optimized
    variant runs the others, whose blocks after the first take the pass.)"""
    size = 100
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, rows)
    bad_row = None
    if bad is not None:
        bad_row = min(rows - 1, size + int(at * (rows - size)))
        codes[bad_row] = bad
    ts = np.arange(rows) // 16
    whole = pa.record_batch([pa.array(ts, i64), _dictionary_kinds(codes, width), pa.array(rng.integers(0, 6, rows), i64)],
                            names=["ts", "kind", "k"])
    batches = [whole.slice(i, size) for i in range(0, rows, size)]

    def build(env):
        return (env.from_arrow(batches, timestamp="ts").filter(col("kind") == "view").key_by("k")
                .window(tumbling(20)).aggregate(n=agg.count()))
    settings_ = adaptive(dense(0, 3, block_rows, select, simd), profile_records=1, step_records=size)
    if bad_row is None:
        expected, _ = reference.run(build(gz.StreamEnvironment()).node)
        actual, metrics = run(build, settings_)
        assert_tables_equal(actual, expected)
        return
    with pytest.raises(gz.BadInputError, match=f"column 'kind': dictionary index {bad} is outside the dictionary "
                                               f"of 3 values in batch {bad_row // size}, row {bad_row % size}"):
        run(build, settings_)


@pytest.mark.parametrize("simd", SIMD)
def test_the_pass_runs_for_dictionary_filters(monkeypatch, simd):
    """(The tests above would pass if the pass never ran: here it must, on YSB-like batches,
    with the vector selection where the host has it.)"""
    rows = 4096 * 4
    rng = np.random.default_rng(5)
    batch = pa.record_batch([pa.array(np.arange(rows) // 4096, i64), _dictionary_kinds(rng.integers(0, 3, rows)),
                             pa.array(rng.integers(0, 6, rows), i64)], names=["ts", "kind", "k"])
    batches = [batch.slice(i, 4096) for i in range(0, rows, 4096)]
    env = gz.StreamEnvironment(adaptive=adaptive(dense(0, 3, 64, True, simd), profile_records=1))
    (env.from_arrow(batches, timestamp="ts").filter(col("kind") == "view").key_by("k")
     .window(tumbling(20)).aggregate(n=agg.count())).collect("out")
    passes = []
    real = kernels.Kernel._claim_entries

    def claim(self, gen, unit, state):
        # lowered by the pass, reset by the claim
        passes.append(int(state[kernels.abi.STATE_UNCLAIMED]) != kernels.abi.INT64_MAX)
        return real(self, gen, unit, state)
    monkeypatch.setattr(kernels.Kernel, "_claim_entries", claim)
    result = env.execute()
    out = result["out"]
    assert any(passes), "the dense pass never ran"
    last = result.metrics["queries"][0]["pipelines"][0]["variant_history"][-1]
    assert last["stage"] == "optimized" and last["options"]["simd_select"] == simd
    views = np.asarray(batch.column(1).indices) == 0
    assert sum(out.column("n").to_pylist()) == int(views.sum())


FILTER_CHOICES = {
    "kind == view": lambda: col("kind") == "view",
    "kind != view": lambda: col("kind") != "view",
    "x < 3": lambda: col("x") < 3,
    "x >= 5": lambda: col("x") >= 5,
    "4 > x (literal left)": lambda: gz.lit(4) > col("x"),
    "y == -2": lambda: col("y") == -2,
    "y <= 0": lambda: col("y") <= 0,
}


@pytest.mark.skipif(not simd_select_available(), reason="the vector selection needs AVX-512 (F, VL)")
@settings(max_examples=60, deadline=None)
@given(rows=st.integers(101, 1200), seed=st.integers(0, 2**31), block_rows=st.sampled_from([8, 16, 24, 64, 4096]),
       filters=st.lists(st.sampled_from(sorted(FILTER_CHOICES)), min_size=1, max_size=3, unique=True),
       size=st.sampled_from([100, 333]))
def test_the_vector_selection_equals_the_reference(rows, seed, block_rows, filters, size):
    """The kept rows listed eight at a time (``simd_select``) for each kind of comparison it
    takes (a dictionary column ==/!= a string; int64 and int32 columns against an integer,
    the literal on either side) and their conjunctions: the reference's windows and counts.
    Event times stay in a window for many rows, so that most blocks take the pass."""
    rng = np.random.default_rng(seed)
    data = {"ts": pa.array(np.arange(rows) // 64, i64),
            "kind": pa.array(np.array(["view", "click", "buy"])[rng.integers(0, 3, rows)]).dictionary_encode(),
            "x": pa.array(rng.integers(0, 10, rows), i64), "y": pa.array(rng.integers(-3, 3, rows), pa.int32()),
            "k": pa.array(rng.integers(0, 6, rows), i64)}
    whole = pa.RecordBatch.from_pydict(data)
    batches = [whole.slice(i, size) for i in range(0, rows, size)]

    def build(env):
        s = env.from_arrow(batches, timestamp="ts")
        for name in filters:
            s = s.filter(FILTER_CHOICES[name]())
        return s.key_by("k").window(tumbling(20)).aggregate(n=agg.count(), t=agg.sum(col("x")))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(adaptive=adaptive(dense(0, 3, block_rows, True, True), profile_records=1,
                                                 step_records=size))
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["filtered_records"] == rows - sum(expected.column("n").to_pylist())  # (none late)


def test_simd_filters_takes_comparisons_of_a_column_with_a_literal_only():
    from grizzly_py.codegen.dense_pass import simd_filters
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    t = pa.table({"ts": pa.array([1], i64), "kind": pa.array(["a"]).dictionary_encode(), "x": pa.array([1], i64),
                  "u": pa.array([1], pa.uint32()), "f": pa.array([1.0]), "s": pa.array(["a"])})

    def filters(*conditions):
        s = gz.StreamEnvironment().from_arrow(t, timestamp="ts")
        for c in conditions:
            s = s.filter(c)
        q = s.key_by("x").window(tumbling(20)).aggregate(n=agg.count())
        return simd_filters(build_physical_plan(Query(q.node)).pipelines[0])
    assert filters(col("kind") == "a", gz.lit(3) < col("x")) == [("kind", "==", "a"), ("x", ">", 3)]
    for unsupported in (col("x") == col("x"), col("f") > 1.0, col("s") == "a",
                        col("u") > 1, col("x") + 1 > 2, (col("x") > 1) | (col("x") < 0)):
        assert filters(unsupported) is None, unsupported
    assert filters() is None  # (no filters: nothing to list)


def test_the_vector_selection_is_not_generated_where_the_host_lacks_avx512(monkeypatch):
    """(LLVM cannot compile the compress intrinsic for such a CPU, and aborts the process.)"""
    from grizzly_py.codegen import dense_pass as dense_pass_module
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    env = gz.StreamEnvironment()
    q = counting_query(*_in_order(), tumbling(20), 0)(env)
    (pipeline,) = build_physical_plan(Query(q.node)).pipelines
    options = CodegenOptions(variant="optimized", dense_keys=(0, 64), dense_select=True, simd_select=True)
    monkeypatch.setattr(dense_pass_module, "simd_select_available", lambda: False)
    monkeypatch.setattr("grizzly_py.codegen.module._GENERATED", OrderedDict())  # (rendered anew each time)
    ir = generate_pipeline(pipeline, options).ir
    assert "avx512" not in ir and "fp.loop" in ir
    monkeypatch.setattr(dense_pass_module, "simd_select_available", lambda: True)
    monkeypatch.setattr("grizzly_py.codegen.module._GENERATED", OrderedDict())
    assert "llvm.x86.avx512.mask.compress" in generate_pipeline(pipeline, options).ir  # (not compiled here)
