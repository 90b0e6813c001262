"""The aggregate registry: every function is one ``AggregateSpec`` (``grizzly_py/aggregates/``)
and one macro file (``codegen_templates/aggregates/``), and nothing else names a function.

- each registered spec is complete: its constructor is ``agg.<name>``, its template defines the
  macros every function has (``update``, ``emit``, ``merge``; ``atomic_update`` where the spec
  says it is atomic), its state and count slot fit, its reference implementation runs;
- no module outside ``grizzly_py/aggregates/`` and no template outside ``aggregates/`` names an
  aggregate function (a new function is a registration, not a string checked in ten files);
- a function registered in a test (an aggregate the package does not have) is compiled and runs
  equal to its reference through every window path, without a change anywhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg, reference
from grizzly_py.aggregates import AggCall, spec_of, specs
from grizzly_py.aggregates.spec import _REGISTRY, AggregateSpec, argument, register
from grizzly_py.codegen.templates import environment, resource_dir
from grizzly_py.types import INT64
from grizzly_py.windows import (EventTimeSessionWindows, SlidingEventTimeWindows,
                                TumblingEventTimeWindows)

from strategies import assert_tables_equal

PACKAGE = Path(gz.__file__).parent


@pytest.mark.parametrize("spec", list(specs()), ids=lambda s: s.name)
def test_every_spec_is_complete(spec):
    assert getattr(agg, spec.name).__wrapped__ == spec.call if spec.public else not hasattr(agg, spec.name)
    module = environment().get_template(spec.template).module
    for macro in ("update", "emit", "merge") + (("atomic_update",) if spec.atomic else ()):
        assert callable(getattr(module, macro, None)), f"{spec.template} has no {macro} macro"
    for kind in ("int", "float") if spec.reads != "validity" else (None,):
        words = spec.state_words(kind)
        assert words >= 1
        slot = spec.count_slot(kind)
        assert (slot is None) == spec.holistic and (slot is None or 0 <= slot < words)
        assert spec.result_store(kind) in ("i64", "double")
    # a vector holds keys (ordered values) or, for the rows of a ranked window, values
    assert spec.reads in ("value", "validity", "key") and (spec.reads != "key" or spec.holistic)


def names_aggregates(line: str, quoted: re.Pattern) -> bool:
    """Whether a line chooses by aggregate names: it quotes two of them (a table or list of
    functions, ``func in ("sum", "avg")``), or compares a ``func`` with one."""
    names = quoted.findall(line)
    return len(set(names)) >= 2 or (bool(names) and re.search(r"\bfunc\b\s*(==|!=|in\b)", line) is not None)


def test_nothing_outside_the_registry_names_an_aggregate():
    """No module outside ``aggregates/`` and no template outside ``aggregates/`` chooses by an
    aggregate's name (``names_aggregates``; a lone word such as Spark's ``first`` action is not a
    choice). A subscript such as ``bounds["min"]`` is not a name of an aggregate."""
    quoted = re.compile(r"""(?<!\[)["'](%s)["']""" % "|".join(sorted(s.name for s in specs())))
    found = []
    for path in PACKAGE.rglob("*.py"):
        if PACKAGE / "aggregates" in path.parents:
            continue
        found += [f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
                  for n, line in enumerate(path.read_text().splitlines(), 1) if names_aggregates(line, quoted)]
    templates = resource_dir("codegen_templates")
    for path in templates.rglob("*.j2"):
        if templates / "aggregates" in path.parents:
            continue
        found += [f"{path.name}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
                  if re.search(r"\ba\.func\s*(==|!=|in\b)", line) or names_aggregates(line, quoted)]
    assert not found, "aggregate functions named outside their specs:\n" + "\n".join(found)


@pytest.mark.parametrize("line, chooses", [
    ('_SLOTS = {"count": 1, "min": 2, "max": 2}', True), ('if func in ("sum", "avg"):', True),
    ('if a.func == "median":', True), ('HOLISTIC = ("median", "mode")', True),
    ('_PART = ("show", "take", "first")', False), ('if bounds["min"] is None', False), ('x = "max"', False)])
def test_the_name_check_sees_choices(line, chooses):
    quoted = re.compile(r"""(?<!\[)["'](%s)["']""" % "|".join(sorted(s.name for s in specs())))
    assert names_aggregates(line, quoted) == chooses


# ----------------------------------------------------------------------------------------------
# A function registered here, from nothing but a spec and its macros
# ----------------------------------------------------------------------------------------------
class SumOfSquares(AggregateSpec):
    """sum(c * c) of the non-null values, an int64 that wraps: a function the package lacks."""

    name = "test_sum_of_squares"
    template = "test_sum_of_squares.ll.j2"
    atomic = True

    def call(self, c) -> AggCall:
        return AggCall(self.name, argument(c))

    def output_type(self, call, arg_type):
        return INT64

    def state_words(self, kind):
        return 2  # [total, n]

    def count_slot(self, kind):
        return 1

    def result_store(self, kind):
        return "i64"

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        total = sum(int(v) * int(v) for v in values) & ((1 << 64) - 1)
        return total - (1 << 64) if total >= 1 << 63 else total


MACROS = """{% import "aggregates/common.ll.j2" as c %}
{% macro update(a) %}
{{ c.slot(a, 0) }}
{{ c.slot(a, 1) }}
  %a{{ a.idx }}.sq = mul i64 {{ a.value }}, {{ a.value }}
  %a{{ a.idx }}.add = select i1 {{ a.valid }}, i64 %a{{ a.idx }}.sq, i64 0
  %a{{ a.idx }}.t = add i64 %a{{ a.idx }}.s0, %a{{ a.idx }}.add
  store i64 %a{{ a.idx }}.t, ptr %a{{ a.idx }}.s0.p
{{ c.count_inc(a, 1, a.valid) }}
{% endmacro %}
{% macro emit(a) %}
  %x{{ a.idx }}.valid = icmp sgt i64 %x{{ a.idx }}.n, 0
  %x{{ a.idx }}.out = load i64, ptr %x{{ a.idx }}.s0.p
  %x{{ a.idx }}.dst = getelementptr inbounds i64, ptr %x{{ a.idx }}.vp, i64 %j
  store i64 %x{{ a.idx }}.out, ptr %x{{ a.idx }}.dst
{% endmacro %}
{% macro merge(a) %}
{{ c.pair(a, 0) }}
{{ c.pair(a, 1) }}
  %m{{ a.idx }}.t = add i64 %m{{ a.idx }}.a0, %m{{ a.idx }}.b0
  store i64 %m{{ a.idx }}.t, ptr %m{{ a.idx }}.a0.p
  %m{{ a.idx }}.n = add i64 %m{{ a.idx }}.a1, %m{{ a.idx }}.b1
  store i64 %m{{ a.idx }}.n, ptr %m{{ a.idx }}.a1.p
{% endmacro %}
{% macro atomic_update(a) %}
  %a{{ a.idx }}.sq = mul i64 {{ a.value }}, {{ a.value }}
  %a{{ a.idx }}.add = select i1 {{ a.valid }}, i64 %a{{ a.idx }}.sq, i64 0
  %a{{ a.idx }}.p = getelementptr inbounds i8, ptr %grp, i64 {{ a.off }}
  %a{{ a.idx }}.old = atomicrmw add ptr %a{{ a.idx }}.p, i64 %a{{ a.idx }}.add monotonic, align 8
{{ c.count_add(a, 1, a.valid) }}
{% endmacro %}
"""


@pytest.fixture
def sum_of_squares(tmp_path, monkeypatch):
    """The test function registered, its macros on the template path, for this test only."""
    import jinja2
    env = environment()
    (tmp_path / "test_sum_of_squares.ll.j2").write_text(MACROS)
    monkeypatch.setattr(env, "loader", jinja2.ChoiceLoader([env.loader, jinja2.FileSystemLoader(str(tmp_path))]))
    spec = register(SumOfSquares())
    yield spec
    del _REGISTRY[spec.name]
    delattr(agg, spec.name)


DATA = {"ts": [1, 3, 4, 8, 12, 13, 15, 22, 23, 31], "k": [1, 2, 1, 1, 2, None, 1, 2, 2, 1],
        "v": [3, -2, None, 5, 7, 1, -4, 0, 9, 2]}


@pytest.mark.parametrize("window, options", [
    (TumblingEventTimeWindows.of(Time.milliseconds(10)), {}),
    (TumblingEventTimeWindows.of(Time.milliseconds(10)), {"parallelism": 2}),
    (TumblingEventTimeWindows.of(Time.milliseconds(10)), {"window_state": "shared", "parallelism": 2}),
    (TumblingEventTimeWindows.of(Time.milliseconds(10)), {"grouping": "sort"}),
    (SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5)), {}),
    (EventTimeSessionWindows.with_gap(Time.milliseconds(4)), {}),
    ("count", {}),
], ids=["tumbling", "p2", "shared", "sort", "sliding", "session", "count"])
def test_a_registered_function_runs_on_every_window_path(sum_of_squares, window, options):
    def build(env):
        keyed = env.from_arrow(pa.table(DATA).to_batches(max_chunksize=3), timestamp="ts").key_by("k")
        windowed = keyed.count_window(2) if window == "count" else keyed.window(window)
        return windowed.aggregate(sq=agg.test_sum_of_squares("v"), n=agg.count())
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result["out"].column("sq").to_pylist() != [None] * result["out"].num_rows


def test_an_unknown_function_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown aggregate 'nope'; aggregates: ") as error:
        spec_of("nope")
    assert all(spec.name in str(error.value) for spec in specs())
