"""Untrusted text never becomes code.

Column names (from Arrow, Parquet and CSV sources), aggregate names and string literals reach
generated IR only through ``codegen/ir_text.py``: escaped in comments, or as byte constants. What
is checked here:

- the exploit that was found: a column name that ends an IR comment and defines ``calloc`` to call
  ``system()`` (which would create a marker file) runs as data, on every source kind and in every
  operator kind, with results equal to the reference evaluator;
- a hypothesis property over arbitrary Unicode names and literals (line breaks, quotes, ``;``,
  ``}``, NULs, IR keywords, names of internal columns), every source kind, every operator kind and
  several engine configurations: each query runs with the reference's results or fails with a
  clear error (never ``CompileError``), and every module compiled on the way defines only
  generated symbols; every code variant of every pipeline is generated and compiled too;
- every interpolation on an IR comment line of a template goes through the ``comment`` filter;
- ``jit.check_symbols`` refuses a module that declares a function outside the runtime or defines
  one the runtime calls;
- ``ir_text``'s two forms: a comment is one line of printable ASCII that decodes back to the
  text; a byte constant holds exactly the bytes (read back from compiled code);
- regular expressions around hostile text (quotes, line breaks, ``}``, ``@``, NULs, the
  exploit): every module compiled for ``contains``/``count_matches``/``extract``/``replace_all``
  defines only generated symbols, the results equal the reference's, and the pattern's text is
  in the IR only as an escaped comment.
"""

from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import Time, agg, col, jit, lit, reference
from grizzly_py.codegen import ir_text
from grizzly_py.codegen.module import CodegenOptions, generate_pipeline
from grizzly_py.codegen.templates import resource_dir, runtime_declarations
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import (EventTimeSessionWindows, SlidingEventTimeWindows,
                                TumblingEventTimeWindows)

from strategies import assert_tables_equal
from marks import slow

ms = Time.milliseconds

# Errors that are clear answers to a bad name or input (raised at definition or when the job
# starts, naming what is wrong); a CompileError is never one: it means generated IR broke.
CLEAR_ERRORS = (gz.SchemaError, gz.BadInputError, NotImplementedError)

# Defined symbols of generated modules: pipelines' (p<id>_<variant>...) and the engine's helpers.
GENERATED_SYMBOL = re.compile(r"^(p\d+_(generic|instrumented|optimized)[A-Za-z0-9_.]*|gz_[a-z0-9_]+)$")


def exploit_name(marker: Path, symbol: str = "gz_injected") -> str:
    """A column name that, pasted into an IR comment, ends the comment and defines ``calloc``
    (which the runtime calls to allocate window state) to run ``touch marker``, plus a function
    ``symbol`` that the symbol checks look for."""
    command = f"touch {marker}".encode() + b"\0"
    return ("x\n"
            f"@gz_cmd = private constant [{len(command)} x i8] {ir_text.byte_array(command)}\n"
            "declare i32 @system(ptr)\n"
            "define ptr @calloc(i64 %a, i64 %b) {\n"
            "  %r = call i32 @system(ptr @gz_cmd)\n"
            "  ret ptr null\n"
            "}\n"
            f"define void @{symbol}() {{\n  ret void\n}}\n"
            "; ")


HOSTILE = ["\n", "a\nb", "\r", "x\r\ny", "}", "{", ";", "; }", '"', "'", "\\", "\\n", "\x00", "a\x00b",
           "define", "declare", "@calloc", "%t1", "ret void", "c\"x\"", "{{ name }}", "{% raw %}", "#}",
           "\u2028", "\x85", "\x0b\x0c", "é", "ß", "日本", "\U0001f600", "", " ", "__gz_event_time",
           "__gz_key_id_k", "__gz_key_id_", "window_start", "window_end", "k_right"]

names_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
hostile_text = st.one_of(st.sampled_from(HOSTILE), names_text,
                         st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=3).map("".join))


# ----------------------------------------------------------------------------------------------
# Queries of every operator kind over columns with the given names
# ----------------------------------------------------------------------------------------------
class Names:
    """The hostile names of one query: time, key, value, string, unused columns; an aggregate
    or computed column's name; a string literal."""

    FIELDS = ("ts", "k", "v", "s", "extra", "out")

    def __init__(self, ts, k, v, s, extra, out, literal):
        self.ts, self.k, self.v, self.s, self.extra, self.out, self.literal = ts, k, v, s, extra, out, literal

    def __repr__(self):
        return "Names(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS + ("literal",)) + ")"


def table_for(n: Names, seed: int = 0) -> pa.Table:
    rows = 24
    strings = [n.literal, "x" + n.literal, "é"]
    return pa.table({
        n.ts: pa.array([3 * i + (i * 7 + seed) % 3 for i in range(rows)], pa.int64()),
        n.k: pa.array([(i * 5 + seed) % 4 for i in range(rows)], pa.int64()),
        n.v: pa.array([(i * 11 + seed) % 9 - 2 for i in range(rows)], pa.int64()),
        n.s: pa.array([strings[(i + seed) % 3] for i in range(rows)], pa.string()),
        n.extra: pa.array([i for i in range(rows)], pa.int64()),
    })


def source(env, kind: str, table: pa.Table, n: Names, folder: Path, tag: str):
    if kind == "arrow":
        return env.from_arrow(table.to_batches(max_chunksize=7), timestamp=n.ts)
    path = folder / f"{tag}.{kind}"
    if kind == "parquet":
        pq.write_table(table, path, row_group_size=10)
        return env.from_parquet(path, timestamp=n.ts)
    pcsv.write_csv(table, path)
    return env.from_csv(path, schema=table.schema, timestamp=n.ts)


def _tumbling():
    return TumblingEventTimeWindows.of(ms(10))


QUERIES = {
    "project": lambda a, b, n: a.filter((col(n.s) == lit(n.literal)) | (col(n.v) > 2))
                                .with_columns(**{n.out: col(n.v) * 2 + col(n.k)}).select(n.ts, n.s, n.out),
    "tumbling": lambda a, b, n: a.filter(col(n.s) != lit(n.literal)).key_by(n.k).window(_tumbling())
                                 .aggregate(**{n.out: agg.sum(n.v)}),
    "string_key": lambda a, b, n: a.key_by(n.s).window(_tumbling()).aggregate(**{n.out: agg.max(n.v)}),
    "sliding": lambda a, b, n: a.key_by(n.k).window(SlidingEventTimeWindows.of(ms(10), ms(5)))
                                .aggregate(**{n.out: agg.avg(n.v)}),
    "session": lambda a, b, n: a.key_by(n.k).window(EventTimeSessionWindows.with_gap(ms(4)))
                                .aggregate(**{n.out: agg.count()}),
    "count_window": lambda a, b, n: a.key_by(n.k).count_window(2).aggregate(**{n.out: agg.min(n.v)}),
    "global": lambda a, b, n: a.window_all(_tumbling()).aggregate(**{n.out: agg.median(n.v)}),
    "holistic": lambda a, b, n: a.key_by(n.k).window(_tumbling())
                                 .aggregate(**{n.out: agg.top_k(n.v, 2)}),
    "union": lambda a, b, n: a.filter(col(n.s) == lit(n.literal)).union(b.filter(col(n.v) > 1))
                              .key_by(n.k).window(_tumbling()).aggregate(**{n.out: agg.count()}),
    "chained": lambda a, b, n: a.key_by(n.k).window(_tumbling()).aggregate(**{n.out: agg.sum(n.v)})
                                .key_by(n.k).window(TumblingEventTimeWindows.of(ms(20)))
                                .aggregate(**{n.out: agg.max(n.out)}),
    "window_join": lambda a, b, n: a.join(b).where(n.k).equal_to(n.k).window(_tumbling()),
    "interval_join": lambda a, b, n: a.interval_join(b).where(n.k).equal_to(n.k).between(ms(-3), ms(3)),
    # the literal as the text options of string functions (patterns, values, separators, formats)
    "strings": lambda a, b, n: a.filter(col(n.s).str.contains(n.literal, literal=True) | col(n.s).str.ends_with(n.literal))
                                .with_columns(**{n.out: gz.concat_str(
                                    col(n.s).str.replace_all(n.literal or "x", f"<{n.literal}>", literal=True),
                                    col(n.ts).dt.strftime(f"%Y{n.literal.replace('%', '')}%j"),
                                    separator=n.literal)})
                                .select(n.ts, n.out),
    "string_aggregate": lambda a, b, n: a.with_columns(**{n.out: col(n.s).str.split_part(n.literal or ",", 0)})
                                         .key_by(n.out).window(_tumbling())
                                         .aggregate(**{n.v: agg.count_distinct(col(n.s).str.to_uppercase()),
                                                       n.k: agg.max(lit(n.literal), where=col(n.v) > 0)}),
}

# engine configurations: (parallelism, window_state, grouping)
CONFIGS = [(1, "thread_local", "auto"), (2, "thread_local", "hash"), (1, "shared", "hash"), (2, "thread_local", "sort")]


def build(env, query: str, source_kind: str, n: Names, folder: Path):
    a = source(env, source_kind, table_for(n, 0), n, folder, "a")
    b = source(env, source_kind, table_for(n, 1), n, folder, "b")
    return QUERIES[query](a, b, n)


@pytest.fixture
def compiled_symbols(monkeypatch):
    """The functions defined by every module parsed for compilation while the test runs."""
    defined: list[str] = []
    check = jit.check_symbols

    def recording(module):
        defined.extend(f.name for f in module.functions if not f.is_declaration)
        return check(module)
    monkeypatch.setattr(jit, "check_symbols", recording)
    return defined


def run_and_compare(query: str, source_kind: str, n: Names, folder: Path, config=CONFIGS[0]) -> str:
    """Run the query compiled and in the reference evaluator; returns "ran" when both gave the
    same table, or the clear error both raised."""
    parallelism, window_state, grouping = config
    try:
        expected, expected_metrics = reference.run(build(gz.StreamEnvironment(), query, source_kind, n, folder).node)
    except CLEAR_ERRORS as e:
        with pytest.raises(type(e)):
            env = gz.StreamEnvironment(parallelism=parallelism, window_state=window_state, grouping=grouping)
            build(env, query, source_kind, n, folder).collect("out")
            env.execute()
        return type(e).__name__
    env = gz.StreamEnvironment(parallelism=parallelism, window_state=window_state, grouping=grouping)
    build(env, query, source_kind, n, folder).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["records_in"] == expected_metrics["records_in"]
    return "ran"


def assert_only_generated_symbols(defined: list[str], forbidden=("calloc", "system", "gz_injected")) -> None:
    for name in defined:
        assert name not in forbidden, f"an injected function {name!r} was compiled"
        assert GENERATED_SYMBOL.match(name), f"a module defined {name!r}, not a generated symbol"


# ----------------------------------------------------------------------------------------------
# The exploit
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source_kind", ["arrow", slow("parquet"), slow("csv")])
@pytest.mark.parametrize("query", sorted(QUERIES))
def test_a_column_name_that_defines_calloc_runs_as_data(query, source_kind, tmp_path, compiled_symbols):
    """The name ends an IR comment and defines ``calloc`` to call ``system("touch marker")``: on
    the code before the fix, the first window state allocated ran it. The unused column and the
    aggregate carry the payload too (a name need not be read to reach the IR)."""
    marker = tmp_path / "injected"
    n = Names(ts="ts", k=exploit_name(marker), v="v\n; " + exploit_name(marker, "gz_injected_v"), s="s",
              extra=exploit_name(marker, "gz_injected_extra"), out=exploit_name(marker, "gz_injected_out"),
              literal=exploit_name(marker, "gz_injected_literal"))
    assert run_and_compare(query, source_kind, n, tmp_path) == "ran"
    assert not marker.exists(), "a name from the data ran as native code"
    assert compiled_symbols, "no module was compiled (the check saw nothing)"
    assert_only_generated_symbols(compiled_symbols)


def test_the_exploit_shape_is_refused_even_without_the_escape(tmp_path, monkeypatch):
    """The second line: were an escape missed (``comment`` made the identity here), the module
    that defines ``calloc`` and declares ``system`` fails to compile and nothing runs."""
    from grizzly_py.codegen import templates
    marker = tmp_path / "injected"
    monkeypatch.setitem(templates.environment().filters, "comment", str)
    n = Names(ts="ts", k="k", v="v", s="s", extra=exploit_name(marker), out="out", literal="x")
    env = gz.StreamEnvironment(adaptive=False)
    build(env, "tumbling", "arrow", n, tmp_path).collect("out")
    with pytest.raises(jit.CompileError, match="system|calloc"):
        env.execute()
    assert not marker.exists()


# ----------------------------------------------------------------------------------------------
# The property
# ----------------------------------------------------------------------------------------------
@st.composite
def hostile_names(draw) -> Names:
    names = draw(st.lists(hostile_text, min_size=len(Names.FIELDS), max_size=len(Names.FIELDS), unique=True))
    return Names(*names, literal=draw(hostile_text))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(n=hostile_names(), query=st.sampled_from(sorted(QUERIES)), source_kind=st.sampled_from(["arrow", "parquet", "csv"]),
       config=st.sampled_from(CONFIGS))
@pytest.mark.slow
def test_hostile_names_and_literals_run_or_fail_clearly(n, query, source_kind, config, tmp_path_factory, compiled_symbols):
    folder = tmp_path_factory.mktemp("hostile")
    compiled_symbols.clear()
    run_and_compare(query, source_kind, n, folder, config)
    assert_only_generated_symbols(compiled_symbols)  # (modules compiled before in this process: not again)


def variant_options() -> list[CodegenOptions]:
    """Every kind of code variant: generic, instrumented, optimized (filter modes, filter order,
    dense keys, the dense pass listing kept rows), shared state, sort grouping."""
    return [CodegenOptions(), CodegenOptions(variant="instrumented"),
            CodegenOptions(variant="optimized", filter_mode="branch", filter_order=(0,)),
            CodegenOptions(variant="optimized", filter_mode="combined"),
            CodegenOptions(variant="optimized", dense_keys=(0, 16)),
            CodegenOptions(variant="optimized", dense_keys=(0, 16), dense_select=True, simd_select=True),
            CodegenOptions(window_state="shared"), CodegenOptions(grouping="sort")]


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(n=hostile_names(), query=st.sampled_from(sorted(QUERIES)))
@pytest.mark.slow
def test_every_code_variant_over_hostile_names_compiles_generated_symbols_only(n, query, tmp_path_factory,
                                                                               compiled_symbols):
    folder = tmp_path_factory.mktemp("variants")
    try:
        stream = build(gz.StreamEnvironment(), query, "arrow", n, folder)
    except CLEAR_ERRORS:
        return  # refused at definition (a name clash): no code
    compiled_symbols.clear()
    for p in build_physical_plan(Query(stream.node)).pipelines:
        for options in variant_options():
            try:
                gen = generate_pipeline(p, options)
                units = [gen.units[name] for name in gen.units]
            except (NotImplementedError, ValueError):
                continue  # a variant this pipeline does not have
            for unit in units:
                jit.compile_ir(unit.ir, unit.opt_level)
    assert_only_generated_symbols(compiled_symbols)


# ----------------------------------------------------------------------------------------------
# Templates, the symbol check, the escaping functions
# ----------------------------------------------------------------------------------------------
_INTERPOLATION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


def _comment_start(line: str) -> int | None:
    """Where the IR comment of a template line starts (its ``;`` outside Jinja tags and ``c"..."``
    constants), or None."""
    i = 0
    while i < len(line):
        if line.startswith(("{{", "{%"), i):
            end = line.find("}}" if line[i + 1] == "{" else "%}", i)
            if end < 0:
                return None
            i = end + 2
        elif line.startswith('c"', i):
            end = line.find('"', i + 2)
            i = end + 1 if end >= 0 else len(line)
        elif line[i] == ";":
            return i
        else:
            i += 1
    return None


def template_comment_interpolations() -> list[tuple[str, int, str]]:
    """(template, line number, expression) of every ``{{ }}`` on an IR comment line."""
    found = []
    for path in sorted(resource_dir("codegen_templates").glob("*.j2")):
        text = re.sub(r"\{#.*?#\}", lambda m: "\n" * m.group(0).count("\n"), path.read_text(), flags=re.S)
        for number, line in enumerate(text.split("\n"), 1):
            start = _comment_start(line)
            if start is not None:
                found += [(path.name, number, m.group(1)) for m in _INTERPOLATION.finditer(line[start:])]
    return found


def test_every_interpolation_on_a_template_comment_line_is_escaped():
    found = template_comment_interpolations()
    assert any("a.name" in e for _, _, e in found)  # the scan sees the aggregate comments
    unescaped = [f"{t}:{n}: {{{{ {e} }}}}" for t, n, e in found if not re.search(r"\|\s*comment$", e)]
    assert not unescaped, "interpolations on IR comment lines must use the comment filter:\n" + "\n".join(unescaped)


def test_the_template_scan_finds_an_unescaped_interpolation(tmp_path, monkeypatch):
    (tmp_path / "codegen_templates").mkdir()
    (tmp_path / "codegen_templates" / "x.ll.j2").write_text(
        '{# ; {{ hidden }} #}\n  %a = add i64 {{ x }}, 0 ; {{ name }} and {{ n | comment }}\n@s = constant [2 x i8] c";{{ y }}"\n')
    monkeypatch.setattr("test_ir_injection.resource_dir", lambda name: tmp_path / name)
    assert template_comment_interpolations() == [("x.ll.j2", 2, "name"), ("x.ll.j2", 2, "n | comment")]


@pytest.mark.parametrize("ir, what", [
    ("declare i32 @system(ptr)\ndefine i64 @p0_generic_f() {\n  ret i64 0\n}\n", "declares function 'system'"),
    ("define ptr @calloc(i64 %a, i64 %b) {\n  ret ptr null\n}\n", "defines function 'calloc'"),
    ("define i64 @gz_hash_mix(i64 %a, i64 %b) {\n  ret i64 0\n}\n", "defines function 'gz_hash_mix'"),
    ("@environ = external global ptr\ndefine ptr @p0_generic_f() {\n  ret ptr @environ\n}\n", "declares global 'environ'"),
])
def test_check_symbols_refuses_modules_that_reach_beyond_the_runtime(ir, what):
    with pytest.raises(jit.CompileError, match=re.escape(what)):
        jit.compile_ir(ir)


def test_check_symbols_accepts_the_runtime_and_intrinsics():
    ir = ("define i64 @p0_generic_f(i64 %x) {\n  %h = call i64 @gz_hash_finish(i64 %x)\n"
          "  %m = call i64 @llvm.smax.i64(i64 %h, i64 0)\n  ret i64 %m\n}\n"
          "declare i64 @llvm.smax.i64(i64, i64)\n" + runtime_declarations())
    assert jit.compile_ir(ir).address("p0_generic_f")


@given(st.text())
def test_a_comment_is_one_line_of_printable_ascii_that_decodes_back(text):
    out = ir_text.comment(text)
    assert all(" " <= ch <= "~" for ch in out)
    assert out.encode("ascii").decode("unicode_escape") == text


@settings(max_examples=25)
@given(st.binary(max_size=40))
def test_a_byte_constant_holds_exactly_the_bytes(data):
    ir = (f"@p0_generic_data = constant [{len(data) + 1} x i8] {ir_text.byte_array(data + b'x')}\n"
          "define ptr @p0_generic_f() {\n  ret ptr @p0_generic_data\n}\n")
    module = jit.compile_ir(ir, 0)
    address = module.function("p0_generic_f", ctypes.c_void_p)()
    assert ctypes.string_at(address, len(data) + 1) == data + b"x"


@pytest.mark.parametrize("s, v", [("", "__gz_key_id_"), ("s", "__gz_key_id_s"), ("s", "__gz_key_id1_s")])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_a_column_named_like_an_id_column_is_read_as_itself(s, v, config, tmp_path):
    """The engine's virtual id column of a string key is named after the key: an input column
    of that name (found by the property below) was read as the ids instead of its values."""
    n = Names(ts="ts", k="k", v=v, s=s, extra="e", out="o", literal="x")
    assert run_and_compare("string_key", "arrow", n, tmp_path, config) == "ran"


def test_string_literals_are_byte_constants_in_the_ir(tmp_path):
    """A literal with a line break and quotes reaches the IR only as a ``c"..."`` constant."""
    n = Names(ts="ts", k="k", v="v", s="s", extra="e", out="o", literal='a"\n; define')
    stream = build(gz.StreamEnvironment(), "tumbling", "arrow", n, tmp_path)
    ir = "\n".join(generate_pipeline(p).ir for p in build_physical_plan(Query(stream.node)).pipelines)
    assert 'c"a\\22\\0A; define"' in ir
    assert "\n; define" not in ir and not any(line.startswith(" define") for line in ir.splitlines())


# ----------------------------------------------------------------------------------------------
# Regular expressions: a pattern reaches the IR as tables of numbers and escaped comments only
# ----------------------------------------------------------------------------------------------
PATTERN_SHAPES = ["(?:{e})+", "({e})|x+", "[{c}]+({e})?", "(?i)^{e}.*$", "(?:{e}|\\s)*?(\\w)"]


@st.composite
def hostile_patterns(draw) -> tuple[str, str]:
    """A regular expression (not plain text) built around hostile text, and a text that holds it."""
    text = draw(hostile_text.filter(bool))
    shape = draw(st.sampled_from(PATTERN_SHAPES))
    return shape.format(e=re.escape(text), c="".join(re.escape(ch) for ch in text)), text


def pattern_query(env, pattern: str, text: str, value: str):
    table = pa.table({"ts": pa.array([0, 1, 2, 3], pa.int64()), "s": pa.array([text, "x" + text + "\n", "", None])})
    s = col("s").str
    group = min(1, re.compile(pattern).groups)
    return env.from_arrow(table, timestamp="ts").filter(s.contains(pattern) | col("s").is_null()).select(
        "ts", n=s.count_matches(pattern), x=s.extract(pattern, group), r=s.replace_all(pattern, value))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(case=hostile_patterns(), value=hostile_text)
def test_hostile_patterns_run_as_data(case, value, compiled_symbols, monkeypatch):
    pattern, text = case
    # every example compiles its modules (so the symbol check sees them), also one that repeats an
    # earlier example's pattern and value, as hypothesis does when it replays a failure
    monkeypatch.setenv("GRIZZLY_CODE_CACHE", "off")
    with jit._lock:
        jit._cache.clear()
    compiled_symbols.clear()
    expected, _ = reference.run(pattern_query(gz.StreamEnvironment(), pattern, text, value).node)
    assert_tables_equal(pattern_query(gz.StreamEnvironment(), pattern, text, value).execute_and_collect(), expected)
    assert compiled_symbols, "no module was compiled (the check saw nothing)"
    assert_only_generated_symbols(compiled_symbols)


def test_a_pattern_that_defines_calloc_runs_as_data(tmp_path, compiled_symbols):
    """The exploit's text as a pattern: in the automaton's comment block (escaped) and in its
    tables (numbers), never code."""
    marker = tmp_path / "injected"
    text = exploit_name(marker, "gz_injected_pattern")
    pattern = f"({re.escape(text)})+|x"
    stream = pattern_query(gz.StreamEnvironment(), pattern, text, text)
    ir = "\n".join(generate_pipeline(p).ir for p in build_physical_plan(Query(stream.node)).pipelines)
    lines = ir.splitlines()
    comments = [line for line in lines if line.startswith("; regular expression /")]
    assert comments and all("@gz_cmd" in line and "gz_injected_pattern" in line for line in comments)  # whole
    assert not any(line.startswith(("@gz_cmd", "define ptr @calloc", "declare i32 @system")) for line in lines)
    expected, _ = reference.run(pattern_query(gz.StreamEnvironment(), pattern, text, text).node)
    assert_tables_equal(stream.execute_and_collect(), expected)
    assert not marker.exists(), "a pattern ran as native code"
    assert_only_generated_symbols(compiled_symbols, forbidden=("calloc", "system", "gz_injected_pattern"))


if os.environ.get("GRIZZLY_INJECTION_SOAK"):  # a longer run: GRIZZLY_INJECTION_SOAK=1 pytest tests/test_ir_injection.py
    test_hostile_names_and_literals_run_or_fail_clearly = settings(max_examples=2000)(
        test_hostile_names_and_literals_run_or_fail_clearly)
