"""Every definition-time error: unknown columns, type errors, bad lambdas, bad arguments.

Each is raised when the query is *defined* (before any data is read) and names the culprit.
"""

import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col, lit
from grizzly_py.lambdas import LambdaTranslationError
from grizzly_py.windows import TumblingEventTimeWindows


@pytest.fixture
def events():
    table = pa.table({"ts": pa.array([1, 2], pa.int64()), "price": [1.0, 2.0], "qty": pa.array([1, 2], pa.int32()),
                      "kind": ["bid", "ask"], "ok": [True, False]})
    return gz.StreamEnvironment().from_arrow(table, timestamp="ts")


TEN_S = TumblingEventTimeWindows.of(Time.seconds(10))


@pytest.mark.parametrize("build, message", [
    (lambda s: s.filter(col("nope") > 1), "unknown column 'nope'"),
    (lambda s: s.with_columns(x=col("missing") + 1), "unknown column 'missing'"),
    (lambda s: s.select("ghost"), "unknown column 'ghost'"),
    (lambda s: s.key_by("ghost"), "unknown column 'ghost'"),
    (lambda s: s.key_by("kind").window(TEN_S).aggregate(x=agg.sum("ghost")), "unknown column 'ghost'"),
    (lambda s: s.filter(col("price") + 1), "expected bool"),
    (lambda s: s.filter(col("kind") > "a"), "strings support only == and !="),
    (lambda s: s.filter(col("kind") == 1), "cannot compare column 'kind'"),
    (lambda s: s.with_columns(x=col("kind") + 1), "left operand column 'kind' has type string"),
    (lambda s: s.filter(col("price") & col("ok")), "needs booleans, but column 'price'"),
    (lambda s: s.filter(~col("price")), "needs a boolean"),
    (lambda s: s.with_columns(x=gz.if_else(col("price"), 1, 2)), "condition"),
    (lambda s: s.with_columns(x=gz.if_else(col("ok"), 1, "a")), "if_else"),
    (lambda s: s.key_by("kind").window(TEN_S).aggregate(x=agg.sum("kind")), "needs a numeric column"),
    (lambda s: s.key_by("kind").window(TEN_S).aggregate(x=agg.sum("ok")), "agg.sum needs a number"),
    (lambda s: s.key_by("kind").window(TEN_S).aggregate(), "at least one aggregate"),
    (lambda s: s.key_by("kind").window(TEN_S).aggregate(window_end=agg.count()), "clashes"),
    (lambda s: s.key_by("kind").window(TEN_S).aggregate(kind=agg.count()), "clashes"),
    (lambda s: s.with_columns(x=col("price").cast("string")), "cannot cast to 'string'"),
    (lambda s: s.with_columns(x=col("kind").cast("int64")), "cannot cast string"),
    (lambda s: s.select(col("price") + 1), "give the expression"),
    (lambda s: s.key_by("kind", "kind"), "duplicate key"),
])
def test_definition_errors_name_the_culprit(events, build, message):
    with pytest.raises(gz.SchemaError, match=message):
        build(events)


def test_lambda_rejects_untranslatable_constructs_by_name(events):
    with pytest.raises(LambdaTranslationError, match=r"function call len\(\)"):
        events.filter(lambda r: len(r.kind) > 2)
    with pytest.raises(LambdaTranslationError, match="list comprehension"):
        events.filter(lambda r: [x for x in r.kind])
    with pytest.raises(LambdaTranslationError, match="'is' compares identity"):
        events.filter(lambda r: r.kind is None)
    with pytest.raises(LambdaTranslationError, match="f-string"):
        events.filter(lambda r: r.kind == f"{r.price}")


def test_lambda_translation_matches_expressions(events):
    threshold = 1.5
    a = events.filter(lambda r: r.price > threshold and r.kind == "bid" and not r.ok)
    b = events.filter((col("price") > 1.5) & (col("kind") == "bid") & ~col("ok"))
    assert repr(a.node.predicate) == repr(b.node.predicate)
    c = events.with_columns(x=lambda r: 1 if r.qty in (1, 3) else r.price * 2)
    assert "isin" in repr(c.node.columns[0][1]) and "if_else" in repr(c.node.columns[0][1])
    d = events.filter(lambda r: 0 < r["qty"] <= 2)
    assert repr(d.node.predicate) == repr((lit(0) < col("qty")) & (col("qty") <= lit(2)))


def test_expression_has_no_truth_value():
    with pytest.raises(TypeError, match="no truth value"):
        bool(col("a") > 1)


def test_source_schema_errors():
    env = gz.StreamEnvironment()
    with pytest.raises(gz.SchemaError, match="timestamp column 'time' does not exist"):
        env.from_arrow(pa.table({"ts": [1]}), timestamp="time")
    with pytest.raises(gz.SchemaError, match="timestamp column 'ts' has type double"):
        env.from_arrow(pa.table({"ts": [1.5]}), timestamp="ts")
    with pytest.raises(gz.SchemaError, match="column 'l' has Arrow type list"):
        env.from_arrow(pa.table({"ts": [1], "l": [[1]]}), timestamp="ts")
    with pytest.raises(TypeError, match="from_arrow takes"):
        env.from_arrow({"ts": [1]}, timestamp="ts")
    with pytest.raises(gz.SchemaError, match="empty list of batches"):
        env.from_arrow([], timestamp="ts")


def test_bad_arguments():
    with pytest.raises(ValueError, match="parallelism"):
        gz.StreamEnvironment(parallelism=0)
    with pytest.raises(ValueError, match="window size must be positive"):
        TumblingEventTimeWindows.of(Time.seconds(0))
    with pytest.raises(ValueError, match="must not be negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(-1))
    with pytest.raises(TypeError, match="window assigner"):
        gz.StreamEnvironment().from_arrow(pa.table({"ts": [1]}), timestamp="ts").window_all(10)
    with pytest.raises(gz.SchemaError, match="does not fit in int64"):
        lit(1 << 64)


def test_two_lambdas_on_one_line_translate_separately(events):
    q = events.filter(lambda r: r.price > 1).filter(lambda r: r.qty > 1)
    assert repr(q.node.predicate) == repr(col("qty") > lit(1))
    assert repr(q.node.input.predicate) == repr(col("price") > lit(1))
    m = events.with_columns(x=lambda r: r.price * 2, y=lambda r: r.qty * 2)
    assert [repr(e) for _, e in m.node.columns] == [repr(col("price") * lit(2)), repr(col("qty") * lit(2))]
    with pytest.raises(LambdaTranslationError, match="non-literal"):
        events.filter(lambda r: r.qty.isin([r.price]))


# ----------------------------------------------------------------------------------------------
# lambdas are found in their file's source, never called
# ----------------------------------------------------------------------------------------------
def test_lambda_on_a_continuation_line_or_as_a_dict_value_is_translated(events):
    # `and` and `in` cannot be evaluated on expressions: only the source gives these
    q = events.filter(
        lambda r: r.price > 1 and r.qty in (1, 3))
    assert repr(q.node.predicate) == repr((col("price") > lit(1)) & col("qty").isin([1, 3]))
    columns = {
        "x": lambda r: r.price * 2 if r.ok and r.kind == "bid" else 0.0,
        "y": lambda r: r.qty + 1,
    }
    m = events.with_columns(**columns)
    assert [repr(e) for _, e in m.node.columns] == [
        repr(gz.if_else(col("ok") & (col("kind") == lit("bid")), col("price") * lit(2), lit(0.0))),
        repr(col("qty") + lit(1))]


def test_lambdas_differing_only_in_captured_values_on_one_line(events):
    lo, hi = 1, 5  # (the two lambdas compile to the same bytecode: only their positions differ)
    q = events.filter(lambda r: r.price > lo and r.ok).filter(lambda r: r.price > hi and r.ok)
    assert repr(q.node.input.predicate) == repr((col("price") > lit(1)) & col("ok"))
    assert repr(q.node.predicate) == repr((col("price") > lit(5)) & col("ok"))


def test_a_lambda_with_a_side_effect_is_rejected_and_never_called(events):
    calls = []
    with pytest.raises(LambdaTranslationError, match=r"function call calls.append\(\)"):
        events.filter(
            lambda r: calls.append(r) or r.price > 1)
    columns = {
        "x": lambda r: calls.append(r) or r.price * 2,
    }
    with pytest.raises(LambdaTranslationError, match=r"function call calls.append\(\)"):
        events.with_columns(**columns)
    assert calls == []


def test_a_lambda_without_source_is_rejected_and_never_called(events):
    calls = []
    namespace = {"calls": calls}
    exec(compile("f = lambda r: calls.append(r) or r.price > 1\ng = lambda r: r.price > 1", "<generated>", "exec"),
         namespace)
    for fn in (namespace["f"], namespace["g"]):
        with pytest.raises(LambdaTranslationError, match=r"source of the lambda \(<generated>, line \d\) is not "
                                                         r"available.*never called.*col\(\.\.\.\)"):
            events.filter(fn)
    assert calls == []


def test_a_lambda_whose_file_changed_since_it_loaded_is_rejected(events, tmp_path, monkeypatch):
    """The source no longer matches the code: an error, not the edited expression."""
    import importlib
    import linecache
    path = tmp_path / "edited_lambdas.py"
    path.write_text("f = lambda r: r.price > 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_lambdas")
    assert repr(events.filter(module.f).node.predicate) == repr(col("price") > lit(1))
    path.write_text("f = lambda r: r.qty > 1\n")  # the same positions, another column
    linecache.checkcache(str(path))
    with pytest.raises(LambdaTranslationError, match="does not match its code"):
        events.filter(module.f)
