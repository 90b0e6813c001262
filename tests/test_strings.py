"""String and date functions, compiled, against the reference evaluator (``grizzly_py/functions/``).

Hypothesis draws strings (ASCII, Latin-1 letters with their case, the multiplication and division
signs, CJK, emoji, NUL, empty strings, nulls, plain and dictionary-encoded columns), random
function trees over them (nested: a slice of a lowercase of a concatenation...), patterns that
are plain text and regular expressions (``tests/test_regex.py`` has the grammar), and times over
the whole int64 range; each query runs compiled, as a projection and as a filter, at
parallelism 1 and 2 with random batches, and must give the reference's table. Hand cases pin
the documented edges (polars' slice clamping, split_part of an empty string, empty patterns,
strftime's years before 1000 and before year 0).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import col, concat_str, if_else, lit, reference
from grizzly_py.expressions import Expr

from strategies import assert_tables_equal

ALPHABET = "ab,. AZéÉßÿ×÷日😀\x00"
texts = st.text(alphabet=ALPHABET, max_size=8)
pieces = st.text(alphabet="ab,. éÉ日", max_size=3)  # literals: patterns, separators, values
regexes = st.sampled_from([r"a+", r"[é日]", r"\bb", r"(a|é)(\w*)", r"x*", r"^a|b$", r"(?i)É", r"\d|\s", r"日.",
                           r"(?s)\x00.?"])


@st.composite
def string_exprs(draw, depth: int = 2) -> Expr:
    """A string-valued expression over the columns ``s`` (plain) and ``d`` (dictionary)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([col("s"), col("d"), col("s"), lit("x,é")]))
    inner = draw(string_exprs(depth - 1))
    kind = draw(st.sampled_from(["lower", "upper", "slice", "split", "replace", "replace_all", "regex_replace",
                                 "extract", "concat", "if_else"]))
    if kind == "lower":
        return inner.str.to_lowercase()
    if kind == "upper":
        return inner.str.to_uppercase()
    if kind == "slice":
        return inner.str.slice(draw(st.integers(-6, 6)), draw(st.one_of(st.none(), st.integers(0, 6))))
    if kind == "split":
        return inner.str.split_part(draw(st.sampled_from([",", ".", "é", "ab"])), draw(st.integers(0, 3)))
    if kind in ("replace", "replace_all"):
        return getattr(inner.str, kind)(draw(pieces), draw(pieces), literal=True)
    if kind == "regex_replace":
        return getattr(inner.str, draw(st.sampled_from(["replace", "replace_all"])))(draw(regexes), draw(pieces))
    if kind == "extract":
        pattern = draw(regexes)
        return inner.str.extract(pattern, draw(st.integers(0, re.compile(pattern).groups)))
    if kind == "concat":
        return concat_str(inner, draw(string_exprs(depth - 1)), separator=draw(st.sampled_from(["", "-", "é"])))
    return if_else(col("k") > 0, inner, draw(string_exprs(depth - 1)))


@st.composite
def scalar_exprs(draw) -> Expr:
    """A bool or int64 function of a string expression."""
    s = draw(string_exprs())
    kind = draw(st.sampled_from(["contains", "regex", "starts", "ends", "len", "count", "regex_count", "eq"]))
    if kind == "contains":
        return s.str.contains(draw(pieces), literal=True)
    if kind == "regex":
        return s.str.contains(draw(regexes))
    if kind == "regex_count":
        return s.str.count_matches(draw(regexes))
    if kind == "starts":
        return s.str.starts_with(draw(pieces))
    if kind == "ends":
        return s.str.ends_with(draw(pieces))
    if kind == "len":
        return s.str.len_chars()
    if kind == "count":
        return s.str.count_matches(draw(pieces), literal=True)
    return s == draw(texts)


@st.composite
def string_tables(draw) -> tuple[pa.Table, list[int]]:
    n = draw(st.integers(0, 24))
    s = draw(st.lists(st.one_of(st.none(), texts), min_size=n, max_size=n))
    d = draw(st.lists(st.one_of(st.none(), st.sampled_from(["", "a,b", "ÉÉ", "x.y.z"])), min_size=n, max_size=n))
    k = draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n))
    table = pa.table({"ts": pa.array(range(n), pa.int64()), "s": pa.array(s, pa.string()),
                      "d": pa.array(d, pa.string()).dictionary_encode(), "k": pa.array(k, pa.int64())})
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
    return table, sizes


def check(table: pa.Table, sizes: list[int], build, parallelism: int = 1) -> None:
    """``build(stream)`` over ``table`` cut into batches of ``sizes`` rows: compiled == reference."""
    whole = table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], table.schema)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    batches = [whole.slice(o, n) for o, n in zip(offsets, sizes)]

    def query(env):
        return build(env.from_arrow(batches, timestamp="ts"))
    expected, _ = reference.run(query(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    query(env).collect("out")
    assert_tables_equal(env.execute()["out"], expected)


@settings(max_examples=60)
@given(string_tables(), st.lists(string_exprs(), min_size=1, max_size=3), st.sampled_from([1, 2]))
def test_string_results_match_the_reference(data, exprs, parallelism):
    table, sizes = data
    check(table, sizes, lambda s: s.select("ts", **{f"o{i}": e for i, e in enumerate(exprs)}), parallelism)


@settings(max_examples=60)
@given(string_tables(), scalar_exprs(), scalar_exprs())
def test_string_predicates_and_counts_match_the_reference(data, a, b):
    table, sizes = data
    pred = a if isinstance(a, Expr) and _is_bool(a) else (a > 0)
    check(table, sizes, lambda s: s.filter(pred).select("ts", "s", v=b))


def _is_bool(e: Expr) -> bool:
    return e.dtype(gz.StreamEnvironment().from_arrow(pa.table({"ts": [0], "s": ["a"], "d": pa.array(["a"]).dictionary_encode(),
                                                                  "k": [0]}), timestamp="ts").schema).is_bool


times = st.one_of(st.integers(-(1 << 62), 1 << 62), st.integers(-10**12, 10**13),
                  st.sampled_from([0, -1, 86399999, 86400000, 951782400000, -62135596800000, -62135596800001,
                                   253402300799999, 253402300800000]))


@settings(max_examples=40)
@given(st.lists(times, min_size=1, max_size=20),
       st.lists(st.sampled_from(["%Y", "%m", "%d", "%H", "%M", "%S", "%j", "%a", "%b", "%%", "-", " ", "T", "é"]),
                max_size=8).map("".join),
       st.sampled_from([pa.int64(), pa.timestamp("ms")]))
def test_dates_match_the_reference(ms, fmt, time_type):
    table = pa.table({"ts": pa.array(sorted(ms), pa.int64()), "t": pa.array(ms, pa.int64()).cast(time_type)})
    parts = {p: getattr(col("t").dt, p)() for p in ("year", "month", "day", "hour", "minute", "weekday")}
    check(table, [len(ms)], lambda s: s.select("ts", f=col("t").dt.strftime(fmt), **parts))


@pytest.mark.parametrize("expr, value, want", [
    (col("s").str.slice(-5, 2), "abc", ""), (col("s").str.slice(-5), "abc", "abc"), (col("s").str.slice(1, 0), "abc", ""),
    (col("s").str.slice(2), "日本語", "語"), (col("s").str.split_part(",", 0), "", None),
    (col("s").str.split_part(",", 3), "a,b", None), (col("s").str.split_part(",", 1), "a,", ""),
    (col("s").str.replace("", "_", literal=True), "ab", "_ab"), (col("s").str.replace_all("", "_", literal=True), "é", "_é_"),
    (col("s").str.count_matches("", literal=True), "日本", 3), (col("s").str.count_matches("aa", literal=True), "aaaa", 2),
    (col("s").str.to_uppercase(), "àÿ×÷ß", "ÀÿÀ÷ß".replace("ÀÿÀ", "Àÿ×")), (col("s").str.to_lowercase(), "ÀÞ×", "àþ×"),
    (col("s").str.len_chars(), "a😀b", 3),
    (col("s").str.replace_all(r"x*", "-"), "abxd", "-a-b--d-"), (col("s").str.replace(r"x*", "-"), "xa", "-a"),
    (col("s").str.count_matches(r"\b"), "ab c", 4), (col("s").str.extract(r"(a)|b", 1), "b", None),
    (col("s").str.extract(r"(a)|b", 0), "cb", "b"), (col("s").str.replace_all(r"(a)", r"\1"), "ba", r"b\1"),
])
def test_documented_edges(expr, value, want):
    table = pa.table({"ts": [0], "s": [value]})
    got = gz.StreamEnvironment().from_arrow(table, timestamp="ts").select(v=expr).execute_and_collect()
    assert got.column("v").to_pylist() == [want]
    assert reference.run(gz.StreamEnvironment().from_arrow(table, timestamp="ts").select(v=expr).node)[0] \
        .column("v").to_pylist() == [want]


@pytest.mark.parametrize("ms, fmt, want", [
    (0, "%Y-%m-%d %H:%M:%S %a %b %j %%", "1970-01-01 00:00:00 Thu Jan 001 %"),
    (-62135596800000, "%Y-%m-%d %a", "0001-01-01 Mon"), (-62135596800001, "%Y-%m-%d %H", "0000-12-31 23"),
    (-62198755200000, "%Y", "-0001"), (951782400000, "%j %d %b", "060 29 Feb"),
])
def test_strftime_edges(ms, fmt, want):
    table = pa.table({"ts": [ms]})
    got = gz.StreamEnvironment().from_arrow(table, timestamp="ts").select(v=col("ts").dt.strftime(fmt)).execute_and_collect()
    assert got.column("v").to_pylist() == [want]


@pytest.mark.parametrize("build, error", [
    (lambda: col("s").str.contains("(a)\\1"), "backreference"), (lambda: col("s").str.contains("(?=a)"), "lookahead"),
    (lambda: col("s").str.contains("(", literal=False), "not a valid regular expression"),
    (lambda: col("s").str.split_part("", 0), "separator"), (lambda: col("s").str.split_part(",", -1), "index"),
    (lambda: col("ts").dt.strftime("%Q"), "%Q"), (lambda: col("s").str.extract("(a)", 2), "group_index"),
])
def test_bad_calls_are_refused_when_defined(build, error):
    with pytest.raises((ValueError, TypeError), match=error):
        build()


def test_type_errors_name_the_call():
    s = gz.StreamEnvironment().from_arrow(pa.table({"ts": [0], "n": [1]}), timestamp="ts")
    with pytest.raises(gz.SchemaError, match="needs a string"):
        s.select(v=col("n").str.to_lowercase())
    with pytest.raises(gz.SchemaError, match="timestamp or int64"):
        s.select(v=col("n").cast("float64").dt.year())


def test_the_same_call_in_a_row_is_computed_once():
    # if_else over lower(s) four times (Q21's shape): one lowering per row and loop, same table
    from grizzly_py.codegen import generate_pipeline
    from grizzly_py.physical import build_physical_plan
    from grizzly_py.plan import Query
    table = pa.table({"ts": list(range(6)), "s": ["A", "b", None, "Bé", "ÉA", "a"]})
    lower = col("s").str.to_lowercase()
    picked = if_else(lower == "a", "0", if_else(lower == "b", "1", if_else(lower == "bé", "2", lower)))

    def build(s):
        return s.select("ts", o=picked, n=lower.str.len_chars())
    check(table, [4, 2], build)
    stream = build(gz.StreamEnvironment().from_arrow(table, timestamp="ts"))
    ir = "\n".join(generate_pipeline(p).ir for p in build_physical_plan(Query(stream.node)).pipelines)
    loops = len(re.findall(r"^define i64 @\w+_process", ir, re.M))  # kernels (with nulls, without): one loop each
    assert 0 < ir.count("call void @gz_str_case(") <= loops
