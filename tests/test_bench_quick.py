"""``grizzly bench --quick`` runs, cross-checks and reports: so that the benchmarks never rot.

Every workload of bench/workloads.py runs on small data with the fast peers that are installed
(hand-written C and numpy always; polars and DuckDB with the ``bench`` extra): grizzly-py's
result must equal the other peers' in every runnable case (the join workloads included, with
results that are not empty; the string workload and Nexmark Q10 and Q14 against pyarrow,
polars and DuckDB; the Nexmark queries beyond windows against pyarrow's Acero), no case may be pending (StreamBox's top-k runs since agg.top_k), a peer
that cannot be installed must be reported missing with the reason, and the Markdown and JSON
reports must be written. One exception, detected from grizzly-py's error rather than listed as
expected to fail: Nexmark Q21 while the engine raises ``NotImplementedError`` for its regular
expression (``str.extract``); its peers must still agree, and its grizzly-py check is skipped
with that message until regexes compile. The result digests that the cross-check compares are
tested on their own below.
"""

import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import suite, suite_report  # noqa: E402
from bench.peers.suite import table_of  # noqa: E402
from bench.window_workloads import digest  # noqa: E402
from bench.workloads import WORKLOADS, row_digest  # noqa: E402
from grizzly_py.cli import main  # noqa: E402
from grizzly_py.workloads import bid_strings  # noqa: E402

pytestmark = pytest.mark.slow  # runs the benchmark suite's quick mode

@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    import os

    out = tmp_path_factory.mktemp("bench")
    old = os.environ.get("GRIZZLY_FLINK_VENV")
    os.environ["GRIZZLY_FLINK_VENV"] = str(out / "no-flink-venv")  # flink: missing, not installed
    try:
        peers = [n for n, p in suite.PEERS.items() if p.fast] + ["flink"]
        opts = suite.Options(quick=True, peers=peers, out=out, progress=False, install=False,
                             plots=True, counters=False, log=lambda s: None)
        start = time.perf_counter()
        result = suite.run_suite(opts)
        seconds = time.perf_counter() - start
        paths = suite_report.write(result, out, opts.plots)
    finally:
        if old is None:
            del os.environ["GRIZZLY_FLINK_VENV"]
        else:
            os.environ["GRIZZLY_FLINK_VENV"] = old
    return result, paths, seconds


def test_every_workload_is_reported(quick_run):
    result, _, _ = quick_run
    assert [w.workload.name for w in result.workloads] == list(WORKLOADS)
    assert not [w.workload.name for w in result.workloads if w.pending]
    assert not [(w.workload.name, c.case.label) for w in result.workloads for c in w.cases if c.case.pending]
    streambox = next(w for w in result.workloads if w.workload.name == "streambox")
    assert "topk-per-key" in [c.case.label for c in streambox.cases]  # runs (agg.top_k), cross-checked below


def test_grizzly_agrees_with_the_peers(quick_run):
    result, _, _ = quick_run
    ran = 0
    for w in result.workloads:
        for c in w.cases:
            if c.case.pending:
                assert all(r.status == "pending" for r in c.results)
                continue
            by = c.by_peer()
            where = f"{w.workload.name} {c.case.label}"
            assert by["grizzly"].ok, f"{where}: {by['grizzly'].error}"
            assert c.check.ok, f"{where}: mismatches {list(c.check.mismatches)}"
            assert "grizzly" in c.check.agreeing and len(c.check.agreeing) >= 2, where
            for r in c.results:
                assert r.status in ("ok", "missing", "no query"), f"{where}: {r.name}: {r.status}: {r.error}"
            if w.workload.windows:
                assert by["grizzly"].info["latency"]["windows"] >= 1, where
            assert by["grizzly"].info["compile_ms"] >= 0, where
            ran += 1
    assert ran >= 24


JOIN_CASES = {("nexmark-q5", "hot-items"), ("nexmark-q7", "-"), ("nexmark-q8", "-"),
              ("streambox", "temporal-join")}


def test_join_workloads_run_against_the_batch_peers(quick_run):
    result, _, _ = quick_run
    seen = set()
    for w in result.workloads:
        for c in w.cases:
            if (w.workload.name, c.case.label) not in JOIN_CASES:
                continue
            seen.add((w.workload.name, c.case.label))
            expected = {"grizzly", "numpy"} | ({"c"} if w.workload.name in ("nexmark-q7", "nexmark-q8") else set())
            assert c.check.ok and expected <= set(c.check.agreeing), (w.workload.name, c.check)
            assert c.check.reference.groups > 0, f"{w.workload.name} {c.case.label}: empty result"
    assert seen == JOIN_CASES


TABLE_CASES = [(w, case.label) for w in ("nexmark-tables", "nexmark-updating", "nexmark-q23")
               for case in WORKLOADS[w].cases(quick=True)]


@pytest.mark.parametrize("workload, case", TABLE_CASES)
def test_nexmark_table_queries_run_against_pyarrow(quick_run, workload, case):
    # the Nexmark queries beyond windows: pyarrow's Acero (the numpy peer, installed everywhere)
    # computes every case and grizzly-py's rows (updating streams: final tables) equal its rows
    result, _, _ = quick_run
    w = next(w for w in result.workloads if w.workload.name == workload)
    c = next(c for c in w.cases if c.case.label == case)
    assert c.by_peer()["numpy"].ok, c.by_peer()["numpy"].error
    assert c.check.ok and {"numpy", "grizzly"} <= set(c.check.agreeing), c.check
    assert c.check.reference.groups > 0, f"{workload} {case}: empty result"


STRING_CASES = [("strings", case) for case in bid_strings.CASES] + [("nexmark-q10", "-"), ("nexmark-q14", "-")]


@pytest.mark.parametrize("workload, case", STRING_CASES)
def test_string_queries_run_against_the_batch_peers(quick_run, workload, case):
    # every case of the string workload and Nexmark Q10, Q14: pyarrow.compute (the numpy peer)
    # agrees with polars and DuckDB where the bench extra installed them, and grizzly-py with them
    result, _, _ = quick_run
    w = next(w for w in result.workloads if w.workload.name == workload)
    if workload == "strings":
        assert [c.case.label for c in w.cases] == list(bid_strings.CASES)
    c = next(c for c in w.cases if c.case.label == case)
    peers = {"numpy"} | {p for p in ("polars", "duckdb") if importlib.util.find_spec(p)}
    assert c.check.ok and peers <= set(c.check.agreeing), c.check
    assert c.check.reference.groups > 0, f"{workload} {case}: empty result"
    grizzly = c.by_peer()["grizzly"]
    assert grizzly.ok, grizzly.error
    assert "grizzly" in c.check.agreeing, c.check


def test_strings_runner_runs_cases_interleaved_with_the_workloads_digest(tmp_path, capsys):
    # python -m bench.strings: the suite's string cases, each peer set up once per case and run
    # round by round, results digested as rows (row_digest) and cross-checked
    from bench import strings

    assert strings.main(["--cases", "url-contains,nexmark-q14", "--rows", "20000", "--repeat", "2",
                         "--peers", "numpy,grizzly", "--out", str(tmp_path)]) == 0
    doc = json.loads(next(tmp_path.glob("strings-*.json")).read_text())
    assert [c["case"] for c in doc["cases"]] == ["url-contains", "nexmark-q14"]
    for case in doc["cases"]:
        assert case["cross_check"]["ok"] and sorted(case["cross_check"]["agreeing"]) == ["grizzly", "numpy"]
        assert case["cross_check"]["reference"]["groups"] > 0
        assert all(len(p["runs"]["seconds"]) == 2 for p in case["peers"])
    out = capsys.readouterr().out
    assert "grizzly ÷ numpy" in out and "ok (2 agree)" in out


def test_holistic_runner_uses_the_same_runner_over_its_own_cases(tmp_path):
    # python -m bench.holistic: the suite's median / mode / top-k / unique-count cases through
    # bench/strings.py's interleaved runner, its reports under its own name
    from bench import holistic

    assert holistic.main(["--cases", "agg-types-mode,streambox-median-per-key", "--rows", "20000",
                          "--repeat", "2", "--peers", "numpy,grizzly", "--out", str(tmp_path)]) == 0
    doc = json.loads(next(tmp_path.glob("holistic-*.json")).read_text())
    assert [c["case"] for c in doc["cases"]] == ["agg-types-mode", "streambox-median-per-key"]
    for case in doc["cases"]:
        assert case["cross_check"]["ok"] and sorted(case["cross_check"]["agreeing"]) == ["grizzly", "numpy"]
        assert case["cross_check"]["reference"]["groups"] > 0
    assert "holistic" in next(tmp_path.glob("holistic-*.md")).read_text().splitlines()[0]


def test_row_digest_ignores_row_order_and_hashes_strings():
    rows = table_of(auction=[1, 2, 1], channel=pa.array(["a", "b", "a"]), dir1=pa.array(["x", "", "x"]))
    assert row_digest(rows) == row_digest(rows.take([2, 0, 1]))
    assert row_digest(rows) != row_digest(rows.slice(1))
    assert row_digest(rows) != row_digest(rows.set_column(2, "dir1", pa.array(["x", "y", "x"])))
    swapped = rows.set_column(1, "channel", pa.array(["x", "", "x"])).set_column(2, "dir1", pa.array(["a", "b", "a"]))
    assert row_digest(rows) != row_digest(swapped)  # a value's column counts


def test_string_hashes_agree_whether_values_repeat_or_not():
    # a column that starts with repeated values is hashed once per distinct value, one whose
    # first rows are distinct value by value: the same value gets the same hash either way
    from bench.window_workloads import DISTINCT_SAMPLE, string_hashes

    distinct = [f"v{i}" for i in range(DISTINCT_SAMPLE)]
    repeating = pa.chunked_array([pa.array(["a", "b"] * DISTINCT_SAMPLE), pa.array(distinct + ["a"])])
    by_dictionary, value_by_value = string_hashes(repeating), string_hashes(repeating.slice(2 * DISTINCT_SAMPLE))
    assert (by_dictionary[2 * DISTINCT_SAMPLE:] == value_by_value).all()
    assert value_by_value[-1] == by_dictionary[0] != by_dictionary[1]
    assert len(set(value_by_value.tolist())) == DISTINCT_SAMPLE + 1  # (the v-values and "a")


def test_digest_ignores_row_order_and_counts_duplicates_and_strings():
    rows = table_of(window_start=[0, 0, 10, 0], key=[1, 2, 1, 1], name=pa.array(["a", "b", "a", "a"]),
                    value=[1.5, 2.5, 3.5, 1.5])
    shuffled = rows.take([3, 2, 1, 0])
    assert digest(rows) == digest(shuffled)
    assert digest(rows) != digest(rows.slice(1))  # one duplicate less
    renamed = rows.set_column(2, "name", pa.array(["a", "c", "a", "a"]))
    assert digest(rows) != digest(renamed)
    dictionary = rows.set_column(2, "name", pa.array(["a", "b", "a", "a"]).dictionary_encode())
    assert digest(table_of(**{n: dictionary[n] for n in dictionary.column_names})) == digest(rows)
    assert digest(rows) != digest(rows.set_column(3, "value", pa.array(np.array([1.5, 2.5, 3.5, 1.6]))))


def test_missing_peer_is_reported_with_its_reason(quick_run):
    result, _, _ = quick_run
    status = suite_report.peer_status(result)
    assert status["flink"]["status"] == "missing"
    assert status["flink"]["reason"]
    assert status["numpy"]["status"] == "ok" and status["c"]["status"] == "ok"


def test_reports_are_written(quick_run):
    result, paths, seconds = quick_run
    md = next(p for p in paths if p.suffix == ".md").read_text()
    doc = json.loads(next(p for p in paths if p.suffix == ".json").read_text())
    assert "topk-per-key" in md and "flink: missing" in md.replace("**", "")
    assert [w["name"] for w in doc["workloads"]] == list(WORKLOADS)
    assert doc["host"]["cpu_count"] >= 1
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pass
    else:
        assert any(p.suffix == ".png" and p.stat().st_size > 0 for p in paths)
    assert seconds < 120, f"--quick took {seconds:.0f} s"


def test_cli_lists_workloads_and_rejects_unknown_ones():
    runner = CliRunner()
    listed = runner.invoke(main, ["bench", "--list"])
    assert listed.exit_code == 0, listed.output
    for name in WORKLOADS:
        assert name in listed.output
    bad = runner.invoke(main, ["bench", "no-such-workload"])
    assert bad.exit_code != 0 and "unknown workloads" in bad.output


def test_interleaved_runs_take_one_run_of_every_peer_per_round():
    # peers in forked children of their own: runs go round by round (the host's drift reaches
    # every peer alike); a missing peer is reported with its reason, a peer whose child dies
    # mid-run fails with how it died, and the others go on
    import os
    import signal

    from bench.harness import run_interleaved
    from bench.peers.base import Peer, PeerUnavailable

    log = []

    class Counting(Peer):
        def __init__(self, name, crash_at=None):
            super().__init__()
            self.name, self.crash_at, self.runs = name, crash_at, 0

        def run(self):
            self.runs += 1
            if self.runs == self.crash_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return pa.table({"window_start": [0], "key": [1], "value": [self.runs * 0 + 7]})

    class Missing(Peer):
        name = "missing"

        def setup(self, data):
            raise PeerUnavailable("not installed here")

    peers = [Counting("a"), Missing(), Counting("b", crash_at=2), Counting("c")]
    results = run_interleaved(peers, None, 1000, 3, log=log.append)
    order = [line.split()[0] for line in log if " run " in line]
    assert order == ["a", "b", "c", "a", "c", "a", "c"]  # b's child died in its second run
    by_name = {r.name: r for r in results}
    assert [r.name for r in results] == ["a", "missing", "b", "c"]
    assert by_name["a"].ok and len(by_name["a"].runs.seconds) == 3 and by_name["c"].ok
    assert by_name["missing"].status == "missing" and "not installed" in by_name["missing"].error
    assert by_name["b"].status == "failed" and "SIGKILL" in by_name["b"].error
    assert len(by_name["b"].runs.seconds) == 1  # (the run before the crash came back)


def test_interleaved_runs_survive_children_that_die_idle_or_finishing():
    # a child killed while it waits between runs (the parent's next command meets a closed
    # pipe) and one that dies in its peer's close() each fail only their peer; the call returns
    import os
    import signal
    import threading

    from bench.harness import run_interleaved
    from bench.peers.base import Peer

    class Slow(Peer):
        name = "slow"

        def run(self):
            time.sleep(0.4)
            return pa.table({"window_start": [0], "key": [1], "value": [7]})

    class DiesIdle(Slow):
        name = "dies_idle"

        def setup(self, data):  # killed ~0.2 s after set-up, while "slow" runs
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()

    class DiesClosing(Slow):
        name = "dies_closing"

        def close(self):
            os.kill(os.getpid(), signal.SIGKILL)

    results = {r.name: r for r in run_interleaved([Slow(), DiesClosing(), DiesIdle()], None, 1000, 2,
                                                  log=lambda line: None)}
    assert results["slow"].ok and len(results["slow"].runs.seconds) == 2
    assert results["dies_idle"].status == "failed" and "SIGKILL" in results["dies_idle"].error
    assert not results["dies_idle"].runs.seconds
    assert results["dies_closing"].status == "failed" and "SIGKILL" in results["dies_closing"].error
    assert len(results["dies_closing"].runs.seconds) == 2  # (its runs came back before it died)


def test_the_bandwidth_ceiling_peers_are_timed_but_left_out_of_the_cross_check():
    # c_stream reads YSB's three columns and computes no query: its runs are timed like any
    # peer's, it has no summary, and the peers that do compute YSB still agree among themselves
    from bench.harness import cross_check, run_interleaved
    from bench.peers.ysb_c import CPeer
    from bench.peers.ysb_numpy import NumpyPeer
    from bench.peers.ysb_stream import StreamCeilingPeer
    from bench.ysb_data import YsbData, generate_ysb

    data = YsbData(generate_ysb(200_000, 3, 100), 100)
    results = {r.name: r for r in run_interleaved([CPeer("hash"), StreamCeilingPeer(1), StreamCeilingPeer(2),
                                                   NumpyPeer()], data, 200_000, 2, log=lambda line: None)}
    for name in ("c_stream", "c_stream_omp2"):
        assert results[name].ok and len(results[name].runs.seconds) == 2 and results[name].summary is None
    check = cross_check(list(results.values()))
    assert check.ok and sorted(check.agreeing) == ["c", "numpy"] and check.reference.total > 0
