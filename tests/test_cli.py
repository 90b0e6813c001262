"""The installed ``grizzly`` command as a user runs it, in a subprocess: a query file's helper
modules import, errors print as one line (the trace with --debug), throughput has a unit that
fits, counter-source diagnostics only with --verbose, and the help says what each option does.

The entry point is the one installed beside this interpreter (``pip install -e .``), run with
this checkout first on ``PYTHONPATH``.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grizzly_py.cli_common import records_per_second

ROOT = Path(__file__).resolve().parent.parent
GRIZZLY = Path(sys.executable).with_name("grizzly")


def grizzly(*args, cwd=None):
    if not GRIZZLY.exists():
        pytest.skip(f"the grizzly entry point is not installed beside {sys.executable} (pip install -e .)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([str(GRIZZLY), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


@pytest.fixture
def project(tmp_path):
    """A query file that imports a helper module from its own folder, and one with a typo."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "events.py").write_text(textwrap.dedent("""
        import pyarrow as pa
        def table():
            return pa.table({"ts": pa.array([1, 4, 12], pa.int64()), "k": [1, 2, 1], "price": [1.0, 2.0, 3.0]})
    """))
    (folder / "q.py").write_text(textwrap.dedent("""
        import grizzly_py as gz
        from grizzly_py import agg, col
        from grizzly_py.windows import TumblingEventTimeWindows
        import events

        def query(env):
            return (env.from_arrow(events.table(), timestamp="ts").filter(col("price") > 1).key_by("k")
                    .window(TumblingEventTimeWindows.of("10 milliseconds")).aggregate(n=agg.count()))
    """))
    (folder / "typo.py").write_text(textwrap.dedent("""
        import grizzly_py as gz
        from grizzly_py import col
        import events

        env = gz.StreamEnvironment()
        query = env.from_arrow(events.table(), timestamp="ts").filter(col("prcie") > 1)
    """))
    return folder


def test_a_helper_module_beside_the_query_file_imports(project, tmp_path):
    out = grizzly("run", project / "q.py", "--json", cwd=tmp_path)  # not run from the project's folder
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["records_out"] == 2
    explain = grizzly("explain", project / "q.py", "--plan", cwd=tmp_path)
    assert explain.returncode == 0 and "WindowAggregate" in explain.stdout, explain.stderr


def test_a_user_error_prints_one_line_and_the_trace_with_debug(project):
    for command in ("run", "explain"):
        out = grizzly(command, project / "typo.py")
        assert out.returncode == 1
        lines = out.stderr.strip().splitlines()
        assert lines == [f"Error: {project / 'typo.py'}, line 7: SchemaError: unknown column 'prcie'; available "
                         f"columns: ts, k, price (--debug shows the full trace)"], out.stderr
    debug = grizzly("run", project / "typo.py", "--debug")
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1].endswith("SchemaError: unknown column 'prcie'; available columns: "
                                                           "ts, k, price")
    missing = grizzly("run", project / "q.py:views")
    assert missing.returncode == 2 and "defines no 'views'" in missing.stderr
    assert "a function views(env) that takes a StreamEnvironment" in " ".join(missing.stderr.split())


@pytest.mark.slow
def test_counter_diagnostics_only_with_verbose_and_rates_with_a_fitting_unit(project):
    plain = grizzly("run", project / "q.py", "--json")
    assert plain.returncode == 0, plain.stderr
    assert "counter_notes" not in plain.stdout and "rejected:" not in plain.stdout
    verbose = json.loads(grizzly("run", project / "q.py", "--json", "--verbose").stdout)
    assert isinstance(verbose["adaptive"]["counter_notes"], list)
    assert "rejected:" not in verbose["adaptive"]["counters"]
    traced = grizzly("run", project / "q.py", "--trace")
    assert traced.returncode == 0 and "rejected:" not in traced.stdout and "at record" in traced.stdout
    rate = re.search(r"= ([\d,.]+ (?:[KMG] )?records/s)", " ".join(traced.stdout.split()))
    assert rate and not rate.group(1).startswith("0.0 "), traced.stdout


def test_run_help_documents_every_option():
    out = grizzly("run", "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert "with --engine spark on a Spark session: local[N], or the cluster of --master" in text
    for option in re.findall(r"^\s+(--[\w-]+)", out.stdout, re.MULTILINE):
        # help on the option's line, or (a long option) on the next, indented past the options
        described = re.search(rf"{option}(?: \[[^\]]*\]| [A-Z]+)?(?:[ \t]+\S|\n {{10,}}\S)", out.stdout)
        assert described, f"{option} has no help text:\n{out.stdout}"


@pytest.mark.parametrize("records, seconds, shown", [
    (30_000_000, 1.25, "24.0 M records/s"), (3, 0.25, "12 records/s"), (81_250, 0.1, "812.5 K records/s"),
    (5_000_000_000, 2.0, "2.5 G records/s"), (0, 1.0, "0 records/s")])
def test_records_per_second_picks_the_unit(records, seconds, shown):
    assert records_per_second(records, seconds) == shown
