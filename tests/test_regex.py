"""Regular expressions compiled to native code (``grizzly_py/codegen/regex/``) against Python's ``re``.

- The generated functions, JIT-compiled alone: for random patterns from a grammar over a small
  alphabet (classes and negated classes, ``\\d \\w \\s \\b``, anchors ``^ $ \\A \\Z``,
  alternation, greedy and lazy ``? * + {m,n}``, groups, scoped flags ``i m s a``, non-ASCII
  literals and classes) and random strings (ASCII, non-ASCII, line breaks, empty), ``_search``,
  ``_count``, ``_find`` iterated as ``re.finditer`` does and ``_group<g>`` give what ``re.search``,
  ``len(finditer)``, the match spans and the group spans give (UTF-8 byte offsets). Long strings
  (past the 32-byte vector scans) are checked with patterns without nested repetitions, so that
  ``re``'s backtracking stays fast.
- The same functions in queries (``contains``, ``count_matches``, ``replace``, ``replace_all``,
  ``extract``) over columns with nulls, plain and dictionary-encoded, against the reference
  evaluator; and Nexmark Q21's ``extract`` from the Flink suite.
- What is refused: unsupported constructs when the query is defined, naming the construct (the
  compiler and the definition check agree); automata beyond the size limits with ``RegexError``,
  when the job's code is generated (never a crash).
- One copy of a pattern's functions per module; ``grizzly explain --ir`` shows the automaton.
"""

from __future__ import annotations

import ctypes
import re

import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import col, jit
from grizzly_py.cli import main
from grizzly_py.codegen.module import generate_pipeline
from grizzly_py.codegen.regex import RegexError, compile_pattern
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query

from test_strings import check

PREFIX = "p0_generic_rx"

ATOMS = ["a", "b", "é", "日", ".", "[ab]", "[^a]", "[a-c]", "[^é日]", "[é-日]", "[\\w\\s]", "[^\\d\\n]", "\\d",
         "\\w", "\\s", "\\W", "\\D", "\\n", "A", "ß", "k", " "]
ASSERTIONS = ["^", "$", "\\A", "\\Z", "\\b", "\\B"]
ALPHABET = "abAé日 \n1_ßkK\u212aÉ"


def patterns(nested: bool = True) -> st.SearchStrategy[str]:
    """Patterns of the grammar; without ``nested``, a repetition applies to an atom only."""
    atom = st.sampled_from(ATOMS + ASSERTIONS)
    quantifier = st.tuples(st.sampled_from(["?", "*", "+", "{2}", "{0,2}", "{1,3}", "{2,}"]),
                           st.sampled_from(["", "?"])).map("".join)
    repeated_atom = st.tuples(st.sampled_from(ATOMS), quantifier).map("".join)

    def extend(inner):
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=3).map("|".join),
            inner.map(lambda p: f"({p})"),
            inner.map(lambda p: f"(?:{p})"),
            st.tuples(st.sampled_from(["i", "m", "s", "a"]), inner).map(lambda fp: f"(?{fp[0]}:{fp[1]})"),
            *([st.tuples(inner, quantifier).map(lambda pq: f"({pq[0]}){pq[1]}"),
               st.tuples(inner, quantifier).map(lambda pq: f"(?:{pq[0]}){pq[1]}")] if nested else []))

    leaf = st.one_of(atom, repeated_atom)
    body = st.recursive(leaf, extend, max_leaves=6)
    return st.tuples(st.sampled_from(["", "", "", "(?i)", "(?m)", "(?s)"]), body).map("".join)


def short_texts():
    return st.text(alphabet=ALPHABET, max_size=10)


def long_texts():
    return st.lists(st.sampled_from(["a", "b", "ab ", "é日", "\n", "1", "K", "xx", "  "]), min_size=15,
                    max_size=60).map("".join)


class Span(ctypes.Structure):
    _fields_ = [("start", ctypes.c_int64), ("end", ctypes.c_int64)]


class Compiled:
    """The JIT-compiled functions of one pattern (made external to be called from here)."""

    def __init__(self, pattern: str):
        regex = compile_pattern(pattern)
        self.python = regex.python
        ir = (regex.emit_search(PREFIX) + regex.emit_find(PREFIX)
              + "".join(regex.emit_group(PREFIX, g) for g in range(1, regex.groups + 1)))
        self.module = jit.compile_ir(ir.replace("define internal", "define"))
        fn = self.module.function
        text = (ctypes.c_char_p, ctypes.c_int64)
        self.search = fn(f"{PREFIX}_search", ctypes.c_bool, *text)
        self.count = fn(f"{PREFIX}_count", ctypes.c_int64, *text)
        self.find = fn(f"{PREFIX}_find", Span, *text, ctypes.c_int64, ctypes.c_bool)
        self.groups = [fn(f"{PREFIX}_group{g}", Span, *text, ctypes.c_int64, ctypes.c_int64)
                       for g in range(1, regex.groups + 1)]

    def matches(self, data: bytes) -> list[list[tuple[int, int]]]:
        """Every match as ``re.finditer`` goes on (after an empty match, not empty there): the
        spans of the match and of each group."""
        out, at, after_empty = [], 0, False
        while len(out) <= 2 * len(data) + 1:  # (empty and non-empty matches can alternate)
            m = self.find(data, len(data), at, after_empty)
            if m.start < 0:
                break
            spans = [(m.start, m.end)]
            for group in self.groups:
                g = group(data, len(data), m.start, m.end)
                spans.append((g.start, g.end))
            out.append(spans)
            at, after_empty = m.end, m.start == m.end
        return out


def compilable(pattern: str) -> re.Pattern:
    """The pattern as ``re`` compiles it, for one that ``re`` accepts (not, e.g., a repeated
    assertion) and that is not too complex to compile to an automaton; hypothesis draws another
    pattern otherwise."""
    try:
        python = re.compile(pattern)
    except re.error:
        assume(False)
    try:
        compile_pattern(pattern)
    except RegexError as e:
        assume("too complex" not in str(e))
        raise
    return python


def compiled(pattern: str) -> Compiled:
    compilable(pattern)
    return Compiled(pattern)


def expected_matches(python: re.Pattern, text: str) -> list[list[tuple[int, int]]]:
    offsets = [0]
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode()))

    def span(m, g):
        return (offsets[m.start(g)], offsets[m.end(g)]) if m.start(g) >= 0 else (-1, -1)
    return [[span(m, g) for g in range(python.groups + 1)] for m in python.finditer(text)]


def assert_like_python(c: Compiled, texts: list[str]) -> None:
    for text in texts:
        data = text.encode()
        expected = expected_matches(c.python, text)
        where = f"pattern {c.python.pattern!r}, text {text!r}"
        assert c.search(data, len(data)) == bool(expected), where
        assert c.count(data, len(data)) == len(expected), where
        assert c.matches(data) == expected, where


@settings(max_examples=80)
@given(patterns(), st.lists(short_texts(), min_size=1, max_size=30))
def test_compiled_functions_match_python_re(pattern, texts):
    assert_like_python(compiled(pattern), texts + [""])


@settings(max_examples=30)
@given(patterns(nested=False), st.lists(long_texts(), min_size=1, max_size=8))
def test_compiled_functions_match_python_re_on_long_strings(pattern, texts):
    assert_like_python(compiled(pattern), texts)


@pytest.mark.parametrize("pattern, texts", [
    (r"(a|ab)(c|bcd)(d*)", ["abcd", "abcdd", "acd"]),                 # leftmost-first, not longest
    (r"(a*)*b|(a|)+c", ["aab", "aac", "b", "c"]),                      # re's rule for empty iterations
    (r"x*", ["abxd", "", "xx"]),                                       # empty matches next to others
    (r"$", ["a\n", "a\n\n", ""]), (r"(?m)^|$", ["a\nb\n"]),           # $ before a final newline
    (r"\b|\B", ["", "ab", "é a"]), (r"(?a)\b\w+\b", ["éa bé", "ab"]),  # Unicode and ASCII word boundaries
    (r"(?i)straße|k", ["STRASSE Straße K \u212a"]),                       # Kelvin sign under IGNORECASE
    (r"[^a]", ["日\U0001f600é"]), (r"(.)(.)", ["é日\U0001f600a"]),      # multi-byte code points
])
def test_hand_cases_match_python_re(pattern, texts):
    assert_like_python(Compiled(pattern), texts)


@pytest.mark.parametrize("pattern", [r"1", r"[12]b*", r"\d(a)", r"x?1a{2}"])
def test_vector_scans_find_a_match_at_every_position(pattern):
    """The skip to a first byte and the check for a required literal read 32 bytes at a time, the
    last part of a string as its last 32 bytes: a match at each position of strings around those
    sizes."""
    texts = ["a" * i + "1" + "a" * (n - i) for n in (0, 5, 31, 32, 33, 63, 64, 70) for i in range(n + 1)]
    assert_like_python(Compiled(pattern), texts + ["a" * n for n in range(70)])


def test_the_hand_cases_cover_both_capture_loops():
    """A capture automaton with one thread per state keeps the registers in SSA values; one with
    more keeps a row of registers per thread (the hand cases above run both)."""
    assert compile_pattern(r"(.)(.)").captures(2).threads == 1
    assert compile_pattern(r"(a|ab)(c|bcd)(d*)").captures(1).threads > 1


# ----------------------------------------------------------------------------------------------
# in queries
# ----------------------------------------------------------------------------------------------
QUERY_TEXTS = st.one_of(st.none(), short_texts(), st.sampled_from(["", "channel_id=5&x", "a\nb", "日本語 é"]))


@settings(max_examples=25)
@given(patterns(), st.lists(QUERY_TEXTS, min_size=1, max_size=12), st.integers(0, 3),
       st.sampled_from(["", "-", "é\\1"]), st.sampled_from(["s", "d"]))
def test_queries_match_the_reference(pattern, values, group, value, column):
    group = min(group, compilable(pattern).groups)
    table = pa.table({"ts": pa.array(range(len(values)), pa.int64()), "s": pa.array(values, pa.string()),
                      "d": pa.array(values, pa.string()).dictionary_encode()})
    s = col(column).str
    exprs = {"contains": s.contains(pattern), "count": s.count_matches(pattern), "first": s.replace(pattern, value),
             "every": s.replace_all(pattern, value), "group": s.extract(pattern, group)}
    check(table, [len(values)], lambda stream: stream.select("ts", **exprs))
    check(table, [len(values)],
          lambda stream: stream.filter(s.contains(pattern)).select("ts", n=s.count_matches(pattern)))


NEXMARK_Q21 = r"(&|^)channel_id=([^&]*)"  # Flink's Nexmark suite, query 21: REGEXP_EXTRACT(url, ..., 2)


def test_nexmark_q21_extract_matches_the_reference():
    urls = ["https://www.nexmark.com/abc/item.htm?query=1&channel_id=1034&x=1",
            "https://www.nexmark.com/abc/item.htm?query=1", "channel_id=7", "a&channel_id=&b", None,
            "a&channel_id=1&channel_id=2", "achannel_id=1", "x&channel_id=é日&y", "channel_id=1&channel_id=2"]
    table = pa.table({"ts": pa.array(range(len(urls)), pa.int64()), "url": pa.array(urls, pa.string())})
    channel_id = col("url").str.extract(NEXMARK_Q21, 2)
    check(table, [4, 5], lambda s: s.select("ts", "url", channel_id=channel_id))
    check(table, [len(urls)], lambda s: s.filter(channel_id.is_not_null()).select("ts", channel_id=channel_id))
    got = gz.StreamEnvironment().from_arrow(table, timestamp="ts").select(v=channel_id).execute_and_collect()
    assert got.column("v").to_pylist() == ["1034", None, "7", "", None, "1", None, "é日", "1"]


# ----------------------------------------------------------------------------------------------
# what is refused
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern, construct", [
    (r"(a)\1", "a backreference"), (r"(?P<x>a)(?P=x)", "a backreference"), (r"a(?=b)", "a lookahead"),
    (r"a(?!b)", "a negative lookahead"), (r"(?<=a)b", "a lookbehind"), (r"(?<!a)b", "a negative lookbehind"),
    (r"(a)?(?(1)b|c)", "a conditional group"), (r"(?>ab)", "an atomic group"), (r"a*+", "a possessive quantifier"),
    (r"x|(?:y(?=z))+", "a lookahead"),
])
def test_unsupported_constructs_are_named_when_the_query_is_defined(pattern, construct):
    with pytest.raises(RegexError, match=re.escape(f"uses {construct}")):
        col("s").str.contains(pattern)
    with pytest.raises(RegexError, match=re.escape(f"uses {construct}")):
        col("s").str.extract(pattern, 0)
    with pytest.raises(RegexError, match=re.escape(f"uses {construct}")):
        compile_pattern(pattern)


@pytest.mark.parametrize("pattern", [
    r"(a|b)*a(a|b){20}",  # the classic: 2^21 states
    r"[^\n]{3000}",       # a few thousand threads per state: too long to build
    r"(?:ab{100}){300}",  # the NFA alone
])
def test_a_pattern_beyond_the_limits_is_refused_when_the_job_starts(pattern):
    with pytest.raises(RegexError, match="too complex"):
        compile_pattern(pattern)
    table = pa.table({"ts": [0], "s": ["ab"]})
    stream = gz.StreamEnvironment().from_arrow(table, timestamp="ts").select(v=col("s").str.contains(pattern))
    with pytest.raises(RegexError, match="too complex"):
        stream.execute_and_collect()


def test_extract_reads_any_group_of_a_pattern_with_many():
    pattern = "".join(f"({c})" for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ") + "?"  # 36 groups, the last optional
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
    table = pa.table({"ts": [0, 1], "s": [letters, "-" + letters[:-1]]})
    s = col("s").str
    check(table, [2], lambda stream: stream.select("ts", first=s.extract(pattern, 1), last=s.extract(pattern, 36)))


# ----------------------------------------------------------------------------------------------
# the generated code
# ----------------------------------------------------------------------------------------------
def _units(stream) -> list[str]:
    return [unit.ir for p in build_physical_plan(Query(stream.node)).pipelines
            for unit in generate_pipeline(p).units.values()]


def test_a_pattern_is_defined_once_per_module_and_plain_text_needs_no_automaton():
    table = pa.table({"ts": [0], "s": ["ab"]})
    s = col("s").str
    stream = gz.StreamEnvironment().from_arrow(table, timestamp="ts").select(
        a=s.contains(r"a+b"), b=s.count_matches(r"a+b"), c=s.extract(r"(a)+b", 1), d=s.extract(r"(a)+b", 1),
        e=s.replace_all(r"a+b", "x"), f=s.contains(r"a\.b"), g=s.contains("a.b", literal=True))
    kernels = [ir for ir in _units(stream) if "_search(" in ir]
    assert kernels
    for ir in kernels:
        searches = re.findall(r"^define internal i1 @(\S+)_search\(", ir, re.M)
        assert len(searches) == 2, searches  # a+b and (a)+b; a\.b is plain text
        assert len(re.findall(r"^define internal .* @\S+_group1\(", ir, re.M)) == 1
        assert len(re.findall(r"^define internal .* @\S+_replace\(", ir, re.M)) == 1


def test_explain_ir_shows_the_automaton(tmp_path):
    path = tmp_path / "q.py"
    path.write_text(
        "import pyarrow as pa\nfrom grizzly_py import col\n\n"
        "def query(env):\n"
        "    t = pa.table({'ts': [0], 'url': ['a&channel_id=1']})\n"
        f"    return env.from_arrow(t, timestamp='ts').select(c=col('url').str.extract({NEXMARK_Q21!r}, 2))\n")
    result = CliRunner().invoke(main, ["explain", str(path), "--ir"])
    assert result.exit_code == 0, result.output
    assert "; regular expression /(&|^)channel_id=([^&]*)/" in result.output
    assert re.search(r"; search automaton: \d+ states over \d+ input classes", result.output)
    assert re.search(r";   s\d+ \(start\): .*-> s\d+", result.output)
    assert "; the capture automaton of group 2" in result.output
