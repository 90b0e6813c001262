"""The wheel is a working grizzly-py: every ``grizzly`` command runs from it, away from any checkout.

The wheel is built from this checkout (``pip wheel``), unpacked into a folder that comes first
on ``sys.path`` (what installing a pure-Python wheel amounts to; the dependencies are this
interpreter's) and run from another folder: ``grizzly bench`` must find its workloads, compile
its C peer from the sources inside the package, agree with the peers, and write its reports to
the cache folder, not into the package or the working directory. The wheel holds the benchmark
code as ``grizzly_py.bench`` but not the checkout's reports (``bench/results``).
"""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # builds and installs a wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the unpacked wheel's folder, the wheel's file names)."""
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out / "dist"),
                            str(ROOT)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (out / "dist").glob("grizzly_py-*.whl")
    site = out / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
        names = z.namelist()
    return site, names


def _run(site: Path, cwd: Path, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site), GRIZZLY_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_wheel_holds_the_benchmarks_but_not_the_checkouts_reports(installed):
    _, names = installed
    assert "grizzly_py/bench/suite.py" in names and "grizzly_py/bench/peers/ysb.c" in names
    assert not [n for n in names if n.startswith("grizzly_py/bench/results")]
    assert not [n for n in names if n.startswith(("bench/", "tests/"))]


def test_grizzly_bench_runs_from_the_wheel_outside_the_checkout(installed, tmp_path):
    site, _ = installed
    cwd, cache = tmp_path / "elsewhere", tmp_path / "cache"
    cwd.mkdir()
    show = "import grizzly_py.cli as c; s, _ = c._bench_modules(); print(s.__name__, s.__file__)"
    where = _run(site, cwd, "-c", show, cache=cache)
    assert where.returncode == 0, where.stderr
    name, path = where.stdout.split()
    assert name == "grizzly_py.bench.suite" and Path(path).is_relative_to(site)

    listed = _run(site, cwd, "-m", "grizzly_py.cli", "bench", "--list", cache=cache)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "ysb" in listed.stdout and "selection" in listed.stdout

    before = sorted(p for p in (ROOT / "bench").rglob("*") if "__pycache__" not in p.parts)
    ran = _run(site, cwd, "-m", "grizzly_py.cli", "bench", "ysb", "selection", "--quick", "--peers", "c,numpy,grizzly",
               "--no-latency", "--no-plots", cache=cache)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    reports = sorted((cache / "bench-results").glob("suite-quick-*.json"))
    assert len(reports) == 1
    doc = json.loads(reports[0].read_text())
    assert [w["name"] for w in doc["workloads"]] == ["ysb", "selection"]
    assert all(doc["peers"][peer]["status"] == "ok" for peer in ("c", "numpy", "grizzly"))
    for w in doc["workloads"]:
        for case in w["cases"]:
            assert sorted(case["cross_check"]["agreeing"]) == ["c", "grizzly", "numpy"], (w["name"], case)
    assert list(cwd.iterdir()) == []  # nothing in the working directory
    assert sorted(p for p in (ROOT / "bench").rglob("*") if "__pycache__" not in p.parts) == before


QUERY = """
import pyarrow as pa
from grizzly_py import Time, agg
from grizzly_py.windows import TumblingEventTimeWindows

def query(env):
    t = pa.table({"ts": list(range(100)), "k": [i % 3 for i in range(100)]})
    return (env.from_arrow(t, timestamp="ts").key_by("k")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(n=agg.count()))
"""


def test_run_and_explain_work_from_the_wheel(installed, tmp_path):
    site, _ = installed
    (tmp_path / "q.py").write_text(QUERY)
    ran = _run(site, tmp_path, "-m", "grizzly_py.cli", "run", "q.py", "--json", cache=tmp_path / "cache")
    assert ran.returncode == 0, ran.stderr
    metrics = json.loads(ran.stdout)
    assert metrics["records_in"] == 100 and metrics["records_out"] == 30
    shown = _run(site, tmp_path, "-m", "grizzly_py.cli", "explain", "q.py", "--ir", cache=tmp_path / "cache")
    assert shown.returncode == 0 and "define " in shown.stdout, shown.stderr


def test_bench_help_names_the_results_folder():
    from grizzly_py.cli import main
    out = CliRunner().invoke(main, ["bench", "--help"]).output
    assert "--out" in out and "bench-results" in out and "GRIZZLY_CACHE_DIR" in out


def test_bench_refuses_a_bench_package_that_is_not_the_checkouts(monkeypatch):
    """(In a checkout without ``grizzly_py.bench``, an importable ``bench`` from elsewhere is not
    taken for the suite.)"""
    import importlib.util
    from types import SimpleNamespace

    from grizzly_py import cli
    real = importlib.util.find_spec
    fake = {"grizzly_py.bench": None, "bench": SimpleNamespace(origin="/elsewhere/bench/__init__.py")}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: fake[name] if name in fake else real(name, *a))
    out = CliRunner().invoke(cli.main, ["bench", "--list"])
    assert out.exit_code != 0 and "not the checkout's" in out.output
