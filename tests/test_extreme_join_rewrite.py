"""The rewrite of a window join of a stream with its own window maximum (minimum) into one
ranked window keeping the rows at the extreme (``grizzly_py/rewrites/extreme_join.py``, issue
31; Nexmark Q7 and Q5's hot items).

- Differential (hypothesis): the pattern over drawn data (ties, nulls, NaN, -0.0, out-of-order
  and late records, several batches, parallelism 1-3, max or min, the extreme column read or
  not): the rewritten job equals the reference evaluator of the query as written, and the job
  with the rewrite turned off; its late and filtered counts are the reference's of the
  rewritten plan (the join counted the stream's records once per side).
  Each example runs on a drawn layout (hash or sort grouping, a shared state asked for, the
  generic variant), so the kept rows are merged across workers on each.
- The state (hypothesis): ``agg._extreme_rows`` alone, as a window aggregate, keeps exactly the
  rows at the extreme (ties all; a better value clears them; nulls never; NaN only when all are;
  ``-0.0`` equal to ``0.0``), however the rows are split between batches and workers: the rows
  the window fires are not filtered again, so a wrong clear or merge shows here.
- Nexmark Q7 and Q5 are rewritten, and equal the reference.
- The kept rows resume from checkpoints at other parallelisms (hash and sort grouping).
- Near misses (another window, sliding windows, another column, a keyed, filtered or second
  aggregate, another stream built from the same data, a filter on one side, a computed key, a
  float extreme read after the join, a timestamp column) are left as they are; ``min`` is
  rewritten as ``max`` is.
- ``grizzly explain`` says that the rewrite happened.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import arrow_stream, assert_tables_equal, event_times, run_collected, tumbling

import grizzly_py as gz
from grizzly_py import agg, col, lit, reference, rewrites
from grizzly_py.windows import SlidingEventTimeWindows
from grizzly_py import Time
from grizzly_py.window_rank import WindowRankNode
from grizzly_py.workloads import nexmark

NAN = float("nan")


def _query(data, sizes, window_ms=10, extreme="max", reads_m=False, bound=0):
    """``build(env)``: the rows of a stream at their window's ``extreme`` of ``c``, as a join."""
    def build(env):
        s = arrow_stream(env, data, sizes=sizes, bound=bound)
        top = s.window_all(tumbling(window_ms)).aggregate(m=getattr(agg, extreme)("c"))
        joined = (s.select("id", "c", "ts").join(top.select("m")).where("c").equal_to("m")
                  .window(tumbling(window_ms)))
        return joined.select("window_end", "id", "c", *(["m"] if reads_m else []))
    return build


def _run(build, parallelism=1, rewrite=True, **options) -> tuple[pa.Table, dict]:
    return run_collected(build, parallelism, None if rewrite else rewrites.switch, **options)


def _rewritten(node) -> bool:
    return bool(rewrites.rewrite(node)[1])


@st.composite
def extreme_cases(draw):
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["i64", "f64"]))
    # floats: a mix, or windows of NaN only (every NaN row is kept, merged states append), or
    # NaN against zeros of both signs
    pool = draw(st.sampled_from([(0.0, -0.0, 1.5, -1.5, 2.0, NAN, math.inf), (NAN,), (NAN, -0.0, 0.0)]))
    small = st.integers(-3, 3) if kind == "i64" else st.sampled_from(pool)
    values = draw(st.lists(st.one_of(small, st.none()), min_size=n, max_size=n))
    if kind == "f64":
        values = [None if v is None else float(v) for v in values]
    data = {"ts": draw(event_times(n)), "id": list(range(n)),
            "c": pa.array(values, pa.int64() if kind == "i64" else pa.float64())}
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n])]
    return dict(data=data, sizes=sizes, window_ms=draw(st.sampled_from([5, 10, 30])),
                extreme=draw(st.sampled_from(["max", "min"])), reads_m=kind == "i64" and draw(st.booleans()),
                bound=draw(st.sampled_from([0, 0, 5]))), draw(st.integers(1, 3)), draw(st.sampled_from(LAYOUTS))


# how the window keeps its state: hash grouping, sort grouping, a shared state asked for (no atomic
# update: it keeps thread-local state, and says why), the generic variant only
LAYOUTS = [{}, {"grouping": "sort"}, {"window_state": "shared"}, {"adaptive": False}]


# every_row_a_morsel (tests/conftest.py): the cost model would give these few hundred rows one
# task; cut, every worker takes part, and a window's kept rows merge from several workers' states
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=extreme_cases())
def test_rewritten_join_equals_the_reference_and_the_join(every_row_a_morsel, case):
    args, parallelism, layout = case
    build = _query(**args)
    node = build(gz.StreamEnvironment()).node
    assert _rewritten(node)
    expected = reference.evaluate(node)
    actual, metrics = _run(build, parallelism, **layout)
    assert_tables_equal(actual, expected)
    joined, join_metrics = _run(build, parallelism, rewrite=False)
    assert_tables_equal(joined, expected)
    _, counted = reference.run(rewrites.rewrite(node)[0])
    assert (metrics["late_records"], metrics["filtered_records"]) == \
        (counted["late_records"], counted["filtered_records"])
    assert metrics["records_in"] == join_metrics["records_in"] == len(args["data"]["id"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=extreme_cases())
def test_the_state_keeps_only_the_rows_at_the_extreme(every_row_a_morsel, case):
    args, parallelism, layout = case

    def build(env):
        s = arrow_stream(env, args["data"], sizes=args["sizes"], bound=args["bound"])
        return s.window_all(tumbling(args["window_ms"])).aggregate(
            kept=agg._extreme_rows("c", keep=args["extreme"]), every=agg._row_values(lit(0), what="arrival"))

    def ordinals(table):  # each kept row as its place among its window's rows, in arrival order
        out = []
        for kept, every in zip(table.column("kept").to_pylist(), table.column("every").to_pylist()):
            place = {p: n for n, p in enumerate(sorted(every))}
            out.append(sorted(place[p] for p in kept or []))
        return out

    expected = reference.evaluate(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=parallelism, **layout)
    build(env).collect("out")
    actual = env.execute()["out"]
    assert actual.column("window_end").to_pylist() == expected.column("window_end").to_pylist()
    assert ordinals(actual) == ordinals(expected)


@pytest.mark.parametrize("options", [{}, {"grouping": "sort"}, {"window_state": "shared", "parallelism": 2},
                                     {"adaptive": False, "parallelism": 3}])
def test_ties_nulls_nan_and_negative_zero_by_hand(options, every_row_a_morsel):
    data = {"ts": [0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14],
            "id": list(range(11)),
            "c": [2.0, None, NAN, 2.0, -0.0, 1.0, 2.0, None, NAN, None, NAN]}
    build = _query(data, [4, 7], window_ms=10)
    expected = reference.evaluate(build(gz.StreamEnvironment()).node)
    assert expected.column("id").to_pylist() == [0, 3, 6, 8, 10]  # ties all; NaN only when all are
    actual, _ = _run(build, **options)
    assert_tables_equal(actual, expected)
    zeros = _query({"ts": [0, 1, 2], "id": [0, 1, 2], "c": [-0.0, 0.0, -1.0]}, [3])
    assert _run(zeros, **options)[0].column("id").to_pylist() == [0, 1]  # -0.0 equals 0.0
    lows = _query(data, [11], extreme="min")
    assert_tables_equal(_run(lows, **options)[0], reference.evaluate(lows(gz.StreamEnvironment()).node))


@pytest.mark.parametrize("name", ["q7", "q5"])
def test_nexmark_q7_and_q5_are_rewritten(name, every_row_a_morsel):
    tables = nexmark.generate_nexmark(6_000, seed=3, batch_rows=300)
    query = nexmark.QUERIES[name]
    node = query(gz.StreamEnvironment(), tables).node
    root, notes = rewrites.rewrite(node)
    assert len(notes) == 1 and "rows_at_max" in notes[0]
    assert any(isinstance(n, WindowRankNode) for n in _nodes(root))
    expected = reference.evaluate(node)
    assert expected.num_rows > 0
    for parallelism in (1, 3):
        env = gz.StreamEnvironment(parallelism=parallelism)
        query(env, tables).collect("out")
        assert_tables_equal(env.execute()["out"], expected)


def _rows_at_max(env, data):
    from test_checkpoint import _bounded
    s = _bounded(env, data)
    top = s.window_all(tumbling(2000)).aggregate(m=agg.max("n"))
    return s.select("k", "n", "ts").join(top.select("m")).where("n").equal_to("m").window(tumbling(2000)) \
        .select("window_end", "k", "n")


@pytest.mark.parametrize("options", [{}, {"grouping": "sort"}], ids=["hash", "sort"])
def test_the_kept_rows_resume_from_checkpoints_at_other_parallelisms(options, tmp_path, every_row_a_morsel):
    """The extreme and what was seen are state words beside the vector: a checkpoint keeps them."""
    from test_checkpoint import _data, run_with_crashes
    data = _data(rows=2000)
    data = data.set_column(data.schema.get_field_index("n"), "n", pa.array(data.column("n").to_numpy() % 7))
    batches = data.to_batches(max_chunksize=100)
    assert _rewritten(_rows_at_max(gz.StreamEnvironment(), batches).node)
    expected, expected_metrics = reference.run(_rows_at_max(gz.StreamEnvironment(), batches).node)
    result = run_with_crashes(_rows_at_max, batches, [3, 11], tmp_path / "chk", parallelisms=[2, 1, 3], **options)
    assert_tables_equal(result["out"], expected)
    assert result.metrics["checkpoints"]["restored_from"] == 11


def _nodes(root):
    from grizzly_py.plan import plan_nodes
    return plan_nodes([root])


DATA = {"ts": [0, 1, 2, 11], "id": [0, 1, 2, 3], "c": [1, 3, 3, 2], "d": [3, 1, 0, 2]}


def _near_miss(kind):
    env = gz.StreamEnvironment()
    s = arrow_stream(env, DATA)
    w, other = tumbling(10), tumbling(20)
    if kind == "other window":
        top = s.window_all(other).aggregate(m=agg.max("c"))
    elif kind == "sliding":
        w = SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5))
        top = s.window_all(w).aggregate(m=agg.max("c"))
    elif kind == "other column":
        top = s.window_all(w).aggregate(m=agg.max("d"))
    elif kind == "two aggregates":
        top = s.window_all(w).aggregate(m=agg.max("c"), n=agg.count())
    elif kind == "keyed":
        top = s.key_by("d").window(w).aggregate(m=agg.max("c"))
    elif kind == "sum":
        top = s.window_all(w).aggregate(m=agg.sum("c"))
    elif kind == "where":
        top = s.window_all(w).aggregate(m=agg.max("c", where=col("d") > 0))
    elif kind == "other stream":
        top = arrow_stream(env, DATA).window_all(w).aggregate(m=agg.max("c"))
    elif kind == "filtered side":
        top = s.filter(col("d") > 0).window_all(w).aggregate(m=agg.max("c"))
    elif kind == "computed key":
        top = s.window_all(w).aggregate(m=agg.max("c"))
        return s.select("id", c=col("d") + 0).join(top.select("m")).where("c").equal_to("m").window(w)
    elif kind == "float m read":
        s = arrow_stream(env, {**DATA, "c": [1.0, 3.0, 3.0, 2.0]})
        top = s.window_all(w).aggregate(m=agg.max("c"))
        return s.select("id", "c", "ts").join(top.select("m")).where("c").equal_to("m").window(w)
    elif kind == "timestamp column":
        s = arrow_stream(env, {**DATA, "c": pa.array([1, 3, 3, 2], pa.timestamp("ms"))})
        top = s.window_all(w).aggregate(m=agg.max("c"))
    else:
        raise AssertionError(kind)
    return s.select("id", "c", "ts").join(top.select("m")).where("c").equal_to("m").window(w).select("id", "c")


NEAR_MISSES = ["other window", "sliding", "other column", "two aggregates", "keyed", "sum", "where", "other stream",
               "filtered side", "computed key", "float m read", "timestamp column"]


@pytest.mark.parametrize("kind", NEAR_MISSES)
def test_near_misses_are_left_as_they_are(kind):
    node = _near_miss(kind).node
    root, notes = rewrites.rewrite(node)
    assert root is node and notes == ()


def test_min_against_max_is_not_the_pattern_but_min_against_min_is():
    env = gz.StreamEnvironment()
    s = arrow_stream(env, DATA)
    low = s.window_all(tumbling(10)).aggregate(m=agg.min("c"))
    node = s.select("id", "c", "ts").join(low.select("m")).where("c").equal_to("m").window(tumbling(10)).node
    root, notes = rewrites.rewrite(node)
    assert "rows_at_min(c)" in notes[0]


def test_explain_says_the_rewrite_happened(tmp_path):
    from click.testing import CliRunner

    from grizzly_py.cli import main
    query = tmp_path / "q.py"
    query.write_text("import pyarrow as pa\n"
                     "from grizzly_py.workloads import nexmark\n"
                     "def query(env):\n"
                     "    return nexmark.q7(env, nexmark.generate_nexmark(500, seed=1)['bid'])\n")
    out = CliRunner().invoke(main, ["explain", f"{query}:query", "--plan"])
    assert out.exit_code == 0, out.output
    assert "rewrite: WindowJoin[price=maxprice" in out.output and "rows_at_max(price)" in out.output
