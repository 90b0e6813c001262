"""``s.union(t, ...)``: hand-computed cases, definition-time errors, and a differential property.

The semantics under test (docs/semantics.md, "Union"): every record keeps its own input's event
time; the watermark after a union is the minimum over its inputs (an input without data yet holds
it back, an input that ended no longer does); the engine reads a query's sources round-robin, one
batch each per round, in order of first appearance in the query, and a batch passes through every
input of the union that reads its source in the order of the union's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (COLUMN_KINDS, EVENT_TIME_TYPES, TIMESTAMP, Step, aggregate_calls,
                        arrow_type_code, assert_tables_equal, batch_slices, can_be_key, event_times,
                        expressions, stateless_steps, tumbling, window_steps)
from test_differential import check_against_reference, run_compiled

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.physical.pipelines import EVENT_TIME_COLUMN, UnionInput, build_physical_plan
from grizzly_py.plan import Query, UnionNode
from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows

i64 = pa.int64()


def batches(column_batches: list[dict]) -> list[pa.RecordBatch]:
    """Record batches from dicts of lists (lists of ints, empty ones too, become int64 columns)."""
    def array(values):
        return pa.array(values, i64) if all(isinstance(v, int) for v in values) else pa.array(values)
    return [pa.record_batch({name: array(values) for name, values in data.items()}) for data in column_batches]


def stream(env, column_batches, bound: int = 0, timestamp: str | None = "ts"):
    return env.from_arrow(batches(column_batches), timestamp=timestamp,
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(bound)))


def rows(table: pa.Table, *names) -> list[tuple]:
    return [tuple(r[n] for n in names) for r in table.to_pylist()]


def compiled_and_reference(build):
    """(table, metrics) of the compiled engine, after checking them against the reference."""
    check_against_reference(build)
    return run_compiled(build)


# ----------------------------------------------------------------------------------------------
# hand-computed cases
# ----------------------------------------------------------------------------------------------
def test_two_sources_into_a_tumbling_window():
    # round 1: A [1, 12] -> wm A 11, B none yet -> min -inf; B [3] -> wm B 2, min 2
    # round 2: A [25] -> wm A 24, min 2; B [14, 4] (4 is on time: min is 2) -> wm B 13, min 13:
    #          [0, 10) fires with 1, 3, 4
    # end: [10, 20) with 12, 14 and [20, 30) with 25
    def build(env):
        a = stream(env, [{"ts": [1, 12], "v": [1, 2]}, {"ts": [25], "v": [3]}])
        b = stream(env, [{"ts": [3], "v": [10]}, {"ts": [14, 4], "v": [20, 30]}])
        return a.union(b).window_all(tumbling(10)).aggregate(n=agg.count(), s=agg.sum("v"))

    table, metrics = compiled_and_reference(build)
    assert rows(table, "window_start", "window_end", "n", "s") == [(0, 10, 3, 41), (10, 20, 2, 22), (20, 30, 1, 3)]
    assert metrics["late_records"] == 0 and metrics["records_in"] == 6


def test_lateness_is_judged_against_the_minimum_watermark():
    # round 1: A [1] -> wm A 0; B [2] -> wm B 1, min 0
    # round 2: A [30] -> wm A 29, min 1; B [15] -> wm B 14, min 14: [0, 10) fires (1, 2).
    #          15 is on time: against A's watermark alone (29) it would be late
    # round 3: A ends (+inf), min 14; B [5]: its window [0, 10) fired at 14: late
    # end: [10, 20) with 15, [30, 40) with 30
    def build(env):
        a = stream(env, [{"ts": [1]}, {"ts": [30]}])
        b = stream(env, [{"ts": [2]}, {"ts": [15]}, {"ts": [5]}])
        return a.union(b).window_all(tumbling(10)).aggregate(n=agg.count())

    table, metrics = compiled_and_reference(build)
    assert rows(table, "window_start", "n") == [(0, 2), (10, 1), (30, 1)]
    assert metrics["late_records"] == 1


def test_an_input_without_data_holds_the_watermark_back():
    # B's first two batches are empty: until B has data the union's watermark is undefined, so
    # nothing fires and B's record 3 is on time although A's watermark is 24 by then
    def build(env):
        a = stream(env, [{"ts": [1]}, {"ts": [12]}, {"ts": [25]}])
        b = stream(env, [{"ts": []}, {"ts": []}, {"ts": [3]}])
        return a.union(b).window_all(tumbling(10)).aggregate(n=agg.count())

    table, metrics = compiled_and_reference(build)
    assert rows(table, "window_start", "n") == [(0, 2), (10, 1), (20, 1)]
    assert metrics["late_records"] == 0


def test_each_input_keeps_its_own_bounded_out_of_orderness():
    # A allows 10 ms of disorder, B none
    def build(env):
        a = stream(env, [{"ts": [20]}, {"ts": [3]}], bound=10)
        b = stream(env, [{"ts": [21]}, {"ts": [22]}])
        return a.union(b).window_all(tumbling(10)).aggregate(n=agg.count())

    # round 1: A [20] -> wm A 9, min -inf; B [21] -> wm B 20, min 9: [0, 10) is empty, nothing
    # round 2: A [3]: [0, 10) complete at 9 -> late; wm A stays 9. B [22] -> wm B 21, min 9
    table, metrics = compiled_and_reference(build)
    assert rows(table, "window_start", "n") == [(20, 3)]
    assert metrics["late_records"] == 1


def test_stateless_union_reads_the_sources_round_robin():
    def build(env):
        a = stream(env, [{"ts": [0, 1], "x": [100, 101]}, {"ts": [2], "x": [102]}, {"ts": [3], "x": [103]}])
        b = stream(env, [{"ts": [0], "x": [200]}, {"ts": [], "x": []}, {"ts": [1, 2], "x": [201, 202]},
                         {"ts": [3], "x": [203]}])
        c = stream(env, [{"ts": [0], "x": [300]}])
        return a.union(b, c)

    # round 1: A0, B0, C0; round 2: A1, B1 (empty), C ends; round 3: A2, B2; round 4: A ends, B3
    table, _ = compiled_and_reference(build)
    assert table.column("x").to_pylist() == [100, 101, 200, 300, 102, 103, 201, 202, 203]


def test_filters_before_and_after_the_union_keep_the_order():
    def build(env):
        a = stream(env, [{"ts": [0, 1, 2], "x": [1, 2, 3]}, {"ts": [3, 4], "x": [4, 5]}])
        b = stream(env, [{"ts": [0, 1], "x": [10, 11]}, {"ts": [2, 3], "x": [12, 13]}])
        return (a.filter(col("x") != 2).union(b.filter(col("x") != 12))
                .filter(col("x") % 2 == 1).with_columns(y=col("x") * 2))

    table, _ = compiled_and_reference(build)
    assert rows(table, "x", "y") == [(1, 2), (3, 6), (11, 22), (5, 10), (13, 26)]


def test_union_of_a_stream_with_itself():
    def build(env):
        s = stream(env, [{"ts": [1, 2], "x": [1, 2]}, {"ts": [3], "x": [3]}])
        return s.union(s)

    table, metrics = compiled_and_reference(build)
    assert table.column("x").to_pylist() == [1, 2, 1, 2, 3, 3]  # each batch through both inputs in turn
    assert metrics["records_in"] == 3  # the source is read once


def test_union_of_two_branches_of_one_source_into_a_window():
    def build(env):
        s = stream(env, [{"ts": [1, 2, 11], "x": [1, 2, 3]}, {"ts": [12, 25], "x": [4, 5]}])
        odd = s.filter(col("x") % 2 == 1).with_columns(tag=col("x") * 0 + 1)
        every = s.with_columns(tag=col("x") * 0 + 2)
        return odd.union(every).key_by("tag").window(tumbling(10)).aggregate(n=agg.count(), s=agg.sum("x"))

    table, _ = compiled_and_reference(build)
    assert rows(table, "window_start", "tag", "n", "s") == [
        (0, 1, 1, 1), (0, 2, 2, 3), (10, 1, 1, 3), (10, 2, 2, 7), (20, 1, 1, 5), (20, 2, 1, 5)]


def test_one_shot_source_read_once_by_two_inputs():
    env = gz.StreamEnvironment()
    s = env.from_arrow(iter(batches([{"ts": [1], "x": [1]}, {"ts": [2], "x": [2]}])), timestamp="ts")
    out = s.filter(col("x") > 1).union(s).execute_and_collect()
    assert out.column("x").to_pylist() == [1, 2, 2]


def test_event_time_survives_a_select_that_drops_it():
    # the inputs' timestamps have different names and are dropped: a hidden column carries them
    def build(env):
        a = stream(env, [{"ts": [1, 15], "v": [1, 2]}])
        b = stream(env, [{"time": [3, 25], "v": [10, 20]}], timestamp="time")
        return a.select("v").union(b.select("v")).window_all(tumbling(10)).aggregate(s=agg.sum("v"))

    env = gz.StreamEnvironment()
    physical = build_physical_plan(Query(build(env).node))
    consumer = next(p for p in physical.pipelines if isinstance(p.input, UnionInput))
    assert repr(consumer.event_time) == f"col({EVENT_TIME_COLUMN!r})"
    assert EVENT_TIME_COLUMN not in consumer.output_schema
    table, _ = compiled_and_reference(build)
    assert rows(table, "window_start", "s") == [(0, 11), (10, 2), (20, 20)]


def test_a_timestamp_column_kept_by_every_input_carries_the_event_time():
    def build(env):
        a = stream(env, [{"ts": [1, 15], "v": [1, 2]}])
        b = stream(env, [{"t": [3, 25], "v": [10, 20]}], timestamp="t")
        return a.union(b.select(ts="t", v="v")).window_all(tumbling(10)).aggregate(s=agg.sum("v"))

    env = gz.StreamEnvironment()
    physical = build_physical_plan(Query(build(env).node))
    consumer = next(p for p in physical.pipelines if isinstance(p.input, UnionInput))
    assert repr(consumer.event_time) == "col('ts')" and EVENT_TIME_COLUMN not in consumer.input_schema
    table, _ = compiled_and_reference(build)
    assert rows(table, "window_start", "s") == [(0, 11), (10, 2), (20, 20)]


def test_union_of_window_results_and_a_window_after_it():
    # per-key counts of two sources in 10 ms windows, united (event time window_end - 1), then
    # summed in 20 ms windows; the watermark after the union is the minimum of the two windows'
    def build_union(env):
        a = stream(env, [{"ts": [1, 2, 12], "k": [1, 2, 1]}, {"ts": [25], "k": [1]}])
        b = stream(env, [{"ts": [3], "k": [2]}, {"ts": [14, 31], "k": [2, 2]}])
        ten = TumblingEventTimeWindows.of(Time.milliseconds(10))
        return (a.key_by("k").window(ten).aggregate(n=agg.count())
                .union(b.key_by("k").window(ten).aggregate(n=agg.count())))

    table, _ = compiled_and_reference(build_union)
    assert rows(table, "k", "window_end", "n") == [
        (1, 10, 1), (2, 10, 1),   # round 1: A's watermark 11
        (1, 20, 1),               # round 2: A's watermark 24
        (2, 10, 1), (2, 20, 1),   # round 2: B's watermark 30
        (1, 30, 1), (2, 40, 1)]   # the ends of A and B

    def build(env):
        twenty = TumblingEventTimeWindows.of(Time.milliseconds(20))
        return build_union(env).key_by("k").window(twenty).aggregate(total=agg.sum("n"))

    # event times window_end - 1: 9, 9, 19 (A), 9, 19 (B: on time, the union's watermark is
    # min(24, 2) = 2 then), min(24, 30) = 24 fires [0, 20); then 29 (A) and 39 (B) at the end
    table, metrics = compiled_and_reference(build)
    assert rows(table, "window_start", "k", "total") == [(0, 1, 2), (0, 2, 3), (20, 1, 1), (20, 2, 1)]
    assert metrics["late_records"] == 0


def test_nested_unions_flatten():
    env = gz.StreamEnvironment()
    a, b, c = (stream(env, [{"ts": [i], "x": [i]}]) for i in range(3))
    u = a.union(b).union(c.union(a))
    assert isinstance(u.node, UnionNode) and len(u.node.inputs) == 4
    assert u.execute_and_collect().column("x").to_pylist() == [0, 0, 1, 2]  # source order: a, b, c
    assert "Union[4 inputs]" in u.explain()


def test_physical_types_are_unified():
    # dictionary and plain strings, int8 and int64, float32 and float64: one Arrow type each
    a = pa.record_batch({"ts": pa.array([1], i64), "s": pa.array(["x"]).dictionary_encode(),
                         "i": pa.array([1], pa.int8()), "f": pa.array([0.5], pa.float32())})
    b = pa.record_batch({"ts": pa.array([2], i64), "s": pa.array(["y"], pa.large_string()),
                         "i": pa.array([2], i64), "f": pa.array([1.5], pa.float64())})

    def build(env):
        return env.from_arrow([a], timestamp="ts").union(env.from_arrow([b], timestamp="ts"))

    table, _ = compiled_and_reference(build)
    assert table.schema.types == [i64, pa.large_string(), i64, pa.float64()]
    assert table.to_pylist() == [{"ts": 1, "s": "x", "i": 1, "f": 0.5}, {"ts": 2, "s": "y", "i": 2, "f": 1.5}]

    def keyed(env):
        return build(env).key_by("s").window(tumbling(10)).aggregate(n=agg.count(), f=agg.sum("f"))
    check_against_reference(keyed)


def test_timestamp_typed_sources_keep_their_type_in_window_columns():
    t = pa.timestamp("ms")

    def build(env):
        a = env.from_arrow(pa.table({"ts": pa.array([1, 12], t)}), timestamp="ts")
        b = env.from_arrow(pa.table({"ts": pa.array([5], t)}), timestamp="ts")
        return a.union(b).window_all(tumbling(10)).aggregate(n=agg.count())

    table, _ = compiled_and_reference(build)
    assert table.schema.field("window_start").type == t
    assert table.column("n").to_pylist() == [2, 1]


def test_each_query_of_a_job_sees_its_own_source_order():
    # the job reads B first (first query), the second query unites A then B: it still gets
    # A's batches before B's in each round, as when it runs alone
    def sources(env):
        return (stream(env, [{"ts": [0], "x": [1]}, {"ts": [1], "x": [2]}]),
                stream(env, [{"ts": [0], "x": [10]}, {"ts": [1], "x": [20]}]))

    env = gz.StreamEnvironment()
    a, b = sources(env)
    b.filter(col("x") > 10).collect("first")
    a.union(b).collect("second")
    result = env.execute()
    assert result["first"].column("x").to_pylist() == [20]
    assert result["second"].column("x").to_pylist() == [1, 10, 2, 20]
    a2, b2 = sources(gz.StreamEnvironment())
    assert a2.union(b2).execute_and_collect().column("x").to_pylist() == [1, 10, 2, 20]


def test_union_metrics_count_each_source_row_once():
    env = gz.StreamEnvironment()
    a = stream(env, [{"ts": [1, 2], "x": [1, 2]}])
    b = stream(env, [{"ts": [3], "x": [3]}])
    a.union(b, a).filter(col("x") > 1).collect("out")
    m = env.execute().metrics
    assert m["records_in"] == 3 and m["records_out"] == 3  # 2 (a), 3 (b), 2 (a again)


def test_event_time_window_needs_event_time_on_every_input():
    def build(env):
        a = stream(env, [{"ts": [1], "x": [1]}])
        b = stream(env, [{"ts": [2], "x": [2]}], timestamp=None)
        return a.union(b)

    assert build(gz.StreamEnvironment()).execute_and_collect().column("x").to_pylist() == [1, 2]
    env = gz.StreamEnvironment()
    with pytest.raises(NotImplementedError, match="timestamp column"):
        build(env).window_all(tumbling(10)).aggregate(n=agg.count()).execute_and_collect()
    with pytest.raises(ValueError, match="timestamp column"):
        reference.run(build(env).window_all(tumbling(10)).aggregate(n=agg.count()).node)


# ----------------------------------------------------------------------------------------------
# definition-time errors
# ----------------------------------------------------------------------------------------------
@pytest.fixture
def env():
    return gz.StreamEnvironment()


@pytest.fixture
def events(env):
    table = pa.table({"ts": pa.array([1], i64), "price": [1.0], "qty": pa.array([1], pa.int32()), "kind": ["bid"]})
    return env.from_arrow(table, timestamp="ts")


@pytest.mark.parametrize("other, message", [
    (lambda s: s.select("ts", "price", "qty"), r"input 2 has no column 'kind'"),
    (lambda s: s.with_columns(extra=col("qty") + 1), r"input 2 has column 'extra', which input 1 has not"),
    (lambda s: s.select("price", "ts", "qty", "kind"), r"another order"),
    (lambda s: s.with_columns(qty=col("qty").cast("int64")), r"column 'qty' has type int32 in input 1 but int64 in input 2"),
    (lambda s: s.with_columns(price=col("qty")), r"column 'price' has type float64 in input 1 but int32"),
    (lambda s: s.with_columns(kind=col("qty") > 1), r"column 'kind' has type string in input 1 but bool"),
])
def test_schema_mismatch_names_the_column(events, other, message):
    with pytest.raises(gz.SchemaError, match=message):
        events.union(other(events))


def test_schema_mismatch_in_a_third_input(events):
    with pytest.raises(gz.SchemaError, match="input 3 has no column 'kind'"):
        events.union(events, events.select("ts", "price", "qty"))


def test_timestamp_columns_need_one_arrow_type(env):
    a = env.from_arrow(pa.table({"ts": pa.array([1], pa.timestamp("ms"))}), timestamp="ts")
    b = env.from_arrow(pa.table({"ts": pa.array([1], pa.timestamp("us"))}), timestamp="ts")
    with pytest.raises(gz.SchemaError, match=r"column 'ts' is timestamp\[ms\] in input 1 but timestamp\[us\]"):
        a.union(b)
    c = env.from_arrow(pa.table({"ts": pa.array([1], i64)}), timestamp="ts")
    with pytest.raises(gz.SchemaError, match="column 'ts' has type timestamp in input 1 but int64"):
        a.union(c)
    # the suggested fix works
    out = a.select(ts=col("ts").cast("int64")).union(b.select(ts=col("ts").cast("int64"))).execute_and_collect()
    assert out.column("ts").to_pylist() == [1, 0]


def test_union_takes_data_streams_of_one_environment(events):
    with pytest.raises(TypeError, match="at least one other stream"):
        events.union()
    with pytest.raises(TypeError, match="input 2 is a KeyedStream"):
        events.union(events.key_by("kind"))
    with pytest.raises(TypeError, match="input 2 is a Table"):
        events.union(pa.table({"ts": [1]}))
    other = gz.StreamEnvironment().from_arrow(pa.table({"ts": pa.array([1], i64)}), timestamp="ts")
    with pytest.raises(ValueError, match="another StreamEnvironment"):
        events.select("ts").union(other)


# ----------------------------------------------------------------------------------------------
# differential property: random unions against the reference evaluator
# ----------------------------------------------------------------------------------------------
@dataclass
class SourceData:
    arrow_schema: pa.Schema
    columns: dict[str, list]
    slices: list[tuple[int, int]]
    bound_ms: int

    def batches(self) -> list[pa.RecordBatch]:
        whole = pa.RecordBatch.from_pydict(self.columns, schema=self.arrow_schema)
        return [whole.slice(offset, length) for offset, length in self.slices]

    def stream(self, env):
        return env.from_arrow(self.batches(), timestamp=TIMESTAMP,
                              watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(self.bound_ms)))


@dataclass
class UnionCase:
    """Sources with one logical schema; union inputs (a source and its filters); steps applied to
    every input (``common``), then the union, then ``after``."""

    sources: list[SourceData]
    inputs: list[tuple[int, list[Step]]]
    common: list[Step] = field(default_factory=list)
    after: list[Step] = field(default_factory=list)

    def build(self, env):
        streams = [s.stream(env) for s in self.sources]
        branches = []
        for index, steps in self.inputs:
            s = streams[index]
            for step in steps + self.common:
                s = step.apply(s)
            branches.append(s)
        out = branches[0].union(*branches[1:])
        for step in self.after:
            out = step.apply(out)
        return out

    def code(self) -> str:
        lines = ["", "import pyarrow as pa", "import grizzly_py as gz",
                 "from grizzly_py import col, lit, agg, if_else, Time, WatermarkStrategy, reference",
                 "from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows",
                 "nan, inf = float('nan'), float('inf')", "env = gz.StreamEnvironment(parallelism=1)"]
        for i, s in enumerate(self.sources):
            schema = ", ".join(f"({f.name!r}, {arrow_type_code(f.type)})" for f in s.arrow_schema)
            lines += [f"whole{i} = pa.RecordBatch.from_pydict({s.columns!r}, schema=pa.schema([{schema}]))",
                      f"s{i} = env.from_arrow([whole{i}.slice(o, n) for o, n in {s.slices!r}], timestamp={TIMESTAMP!r}, "
                      f"watermark=WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds({s.bound_ms})))"]
        common = "".join(step.code() for step in self.common)
        branches = [f"s{i}" + "".join(step.code() for step in steps) + common for i, steps in self.inputs]
        after = "".join(f"\n     {step.code()}" for step in self.after)
        lines += [f"q = ({branches[0]}\n     .union({', '.join(branches[1:])}){after})",
                  "expected, ref_metrics = reference.run(q.node)",
                  "q.collect('out'); result = env.execute()",
                  "print(result['out'], result.metrics, expected, ref_metrics, sep='\\n')"]
        return "\n".join(lines)

    def __repr__(self):
        return self.code()

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.code())


def _plain_strings(t: pa.DataType) -> pa.DataType:
    return pa.string() if pa.types.is_dictionary(t) else t


@st.composite
def union_sources(draw, max_rows: int = 15) -> list[SourceData]:
    """2-3 sources with the same columns (an int64 or timestamp event time, 1-4 more columns);
    some hold the dictionary columns as plain strings (another Arrow type, the same column type)."""
    kinds = draw(st.lists(st.sampled_from(sorted(COLUMN_KINDS)), min_size=1, max_size=4))
    ts_type = draw(st.sampled_from(EVENT_TIME_TYPES))
    out = []
    for _ in range(draw(st.integers(2, 3))):
        n = draw(st.integers(0, max_rows))
        times = draw(event_times(n))
        if ts_type == pa.timestamp("us"):
            times = [t * 1000 + draw(st.integers(0, 999)) for t in times]
        plain = draw(st.booleans())
        fields, columns = [pa.field(TIMESTAMP, ts_type)], {TIMESTAMP: times}
        for i, kind in enumerate(kinds):
            arrow_type, values = COLUMN_KINDS[kind]
            name = f"{kind}_{i}"
            fields.append(pa.field(name, _plain_strings(arrow_type) if plain else arrow_type))
            columns[name] = draw(st.lists(st.none() | values, min_size=n, max_size=n))
        out.append(SourceData(pa.schema(fields), columns, draw(batch_slices(n)), draw(st.integers(0, 8))))
    return out


@st.composite
def time_window_steps(draw, schema) -> list[Step]:
    """A keyed or global tumbling or sliding event-time window (no count windows: their results
    have no event time for a window after the union)."""
    candidates = [f.name for f in schema if can_be_key(f)]
    keys = draw(st.lists(st.sampled_from(candidates), unique=True, max_size=1)) if candidates else []
    size = draw(st.integers(1, 20))
    if draw(st.booleans()):
        assigner = TumblingEventTimeWindows.of(Time.milliseconds(size))
    else:
        assigner = SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(draw(st.integers(1, size))))
    calls = draw(st.lists(aggregate_calls(schema), min_size=1, max_size=2))
    head = [Step("key_by", tuple(keys)), Step("window", (assigner,))] if keys else [Step("window_all", (assigner,))]
    return head + [Step("aggregate", kwargs={f"agg{i}": c for i, c in enumerate(calls)})]


def _apply(stream, steps):
    for step in steps:
        stream = step.apply(stream)
    return stream


@st.composite
def union_cases(draw) -> UnionCase:
    sources = draw(union_sources())
    env = gz.StreamEnvironment()
    schema = sources[0].stream(env).schema
    inputs = []
    for i in range(draw(st.integers(2, 3))):  # mostly one source each; sometimes one read twice
        reuse = i >= len(sources) or draw(st.integers(0, 3)) == 3
        index = draw(st.integers(0, len(sources) - 1)) if reuse else i
        filters = [Step("filter", (draw(expressions(schema, "bool")),)) for _ in range(draw(st.integers(0, 1)))]
        inputs.append((index, filters))
    case = UnionCase(sources, inputs)
    shape = _apply(sources[0].stream(env), [])
    projection = draw(st.integers(0, 3))  # the same projection on every input
    if projection == 1:
        case.common.append(draw(stateless_steps(shape.schema)))
    elif projection == 2:  # the event-time column dropped: a hidden column carries event time
        case.common.append(Step("select", tuple(n for n in shape.schema.names if n != TIMESTAMP)))
    shape = _apply(shape, case.common)
    if draw(st.integers(0, 4)) == 0:  # window results united, their columns renamed (no clashes later)
        case.common += draw(time_window_steps(shape.schema))
        shape = _apply(sources[0].stream(env), case.common)
        case.common.append(Step("select", kwargs={f"w{i}": name for i, name in enumerate(shape.schema.names)}))
        shape = case.common[-1].apply(shape)
    for _ in range(draw(st.integers(0, 2))):
        step = draw(stateless_steps(shape.schema))
        case.after.append(step)
        shape = step.apply(shape)
    if draw(st.integers(0, 2)) != 0:
        case.after += draw(window_steps(shape.schema))
    return case


@settings(max_examples=max(settings().max_examples * 3 // 4, 3))
@given(union_cases())
@pytest.mark.slow
def test_unions_match_reference(case):
    try:
        expected, expected_metrics = reference.run(case.build(gz.StreamEnvironment(parallelism=1)).node)
    except AggregateOverflowError:
        with pytest.raises(AggregateOverflowError):
            run_compiled(case.build)
        return
    actual, metrics = run_compiled(case.build)
    assert_tables_equal(actual, expected)
    assert metrics["late_records"] == expected_metrics["late_records"], "late record counts differ"
    assert metrics["records_in"] == expected_metrics["records_in"]


def test_union_case_reproducer_runs():
    case = UnionCase([SourceData(pa.schema([pa.field("ts", i64), pa.field("x", i64)]),
                                 {"ts": [1, 2], "x": [3, 4]}, [(0, 1), (1, 1)], 0)],
                     [(0, [Step("filter", (col("x") > 3,))]), (0, [])],
                     after=[Step("window_all", (tumbling(10),)), Step("aggregate", kwargs={"n": agg.count()})])
    namespace: dict = {}
    exec(compile(case.code(), "<reproducer>", "exec"), namespace)
    assert namespace["result"]["out"].column("n").to_pylist() == [3]
    assert repr(case) == case.code()
