"""``bench/adaptive.py --quick`` runs and reports: so that the adaptive benchmark never rots.

On small data with short stages (``wait_for_compile``: exact stage lengths) every scenario runs
its curves (adaptive, generic and the fixed predicate orders); the plots and the JSON must be
written, every curve's result must equal the generic run's, and the totals must equal a count of
the stream's records done with numpy. The adaptive runs must go through the stages the scenario
is built for (the range scenario deoptimizes when the keys grow and optimizes again). The replay
stream and the binning are tested on their own below.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import adaptive  # noqa: E402
from grizzly_py.workloads import adaptive as scenarios  # noqa: E402
from grizzly_py.workloads.ysb import EPOCH_MS  # noqa: E402

ROWS, DISTINCT = 1_280_000, 384_000


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("adaptive")
    code = adaptive.main(["--quick", "--rows", str(ROWS), "--distinct-rows", str(DISTINCT),
                          "--out", str(out), "--img", str(out / "img")])
    [js] = out.glob("adaptive-*.json")
    return code, out, json.loads(js.read_text())


@pytest.mark.slow  # the quick benchmark run (the fixture)
def test_writes_plots_and_reports(quick):
    code, out, doc = quick
    assert code == 0
    assert [s["name"] for s in doc["scenarios"]] == list(adaptive.SCENARIOS)
    for name in ("range", "selectivity", "skew"):
        png = out / "img" / f"adaptive-{name}.png"
        assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    md = next(out.glob("adaptive-*.md")).read_text()
    assert "## Re-optimization after the change" in md and "adaptive-range.png" in md
    assert doc["targets"]["results_equal"] is True


def _expected_total(name: str) -> int:
    """Records that reach the window (views passing every predicate) in the whole stream."""
    s = adaptive.SCENARIOS[name]
    table = s.generate(DISTINCT, 42, adaptive.BATCH_ROWS)
    keep = table.column("event_type").to_numpy().astype(str) == "view" if pa.types.is_dictionary(
        table.schema.field("event_type").type) else table.column("event_type").to_numpy() == 0
    if name == "selectivity":
        for j in range(len(scenarios.SELECTIVITIES)):
            keep &= table.column(f"p{j + 1}").to_numpy() >= scenarios.PREDICATE_MIN
    return int(keep.sum()) * (ROWS // DISTINCT)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(adaptive.SCENARIOS))
def test_adaptive_results_equal_generic_and_numpy(quick, name):
    _, _, doc = quick
    s = next(s for s in doc["scenarios"] if s["name"] == name)
    generic = s["curves"]["generic"]["digests"][0]
    for curve, c in s["curves"].items():
        assert c["digests"] == [generic] * len(c["digests"]), curve
    assert s["results_equal"] is True
    assert generic["total"] == _expected_total(name)


def _stages(doc, name, curve="adaptive"):
    s = next(s for s in doc["scenarios"] if s["name"] == name)
    return s, [h["stage"] for h in s["curves"][curve]["history"]]


@pytest.mark.slow
def test_adaptive_runs_go_through_the_stages(quick):
    _, _, doc = quick
    s, stages = _stages(doc, "range")
    assert stages == ["generic", "instrumented", "optimized", "generic", "instrumented", "optimized"]
    history = s["curves"]["adaptive"]["history"]
    assert history[3]["reason"].startswith("deoptimized")
    # the first selected record whose key is outside the dense range (one chunk: the first copy)
    lo, cap = history[2]["options"]["dense_keys"]
    table = adaptive.SCENARIOS["range"].generate(DISTINCT, 42, adaptive.BATCH_ROWS)
    keys = table.column("campaign_id").to_numpy()
    views = table.column("event_type").to_numpy().astype(str) == "view"
    outside = np.nonzero(views & ((keys < lo) | (keys >= lo + cap)))[0]
    assert history[3]["at_record"] == outside[0] >= s["change_record"]
    assert history[2]["options"]["dense_keys"] is not None and history[5]["options"]["dense_keys"] is not None
    [reopt] = s["curves"]["adaptive"]["reoptimization"]
    assert reopt["optimized_after_records"] == history[5]["at_record"] - s["change_record"] > 0
    assert _stages(doc, "ysb")[1] == ["generic", "instrumented", "optimized"]
    # 1M keys, each sampled about once: the key range decides, a dense table of 2M entries
    s, stages = _stages(doc, "skew")
    assert stages[:3] == ["generic", "instrumented", "optimized"]
    lo, cap = s["curves"]["adaptive"]["history"][2]["options"]["dense_keys"]
    assert lo <= 0 and lo + cap >= scenarios.SKEW_KEYS
    for curve, order in adaptive.SELECTIVITY_ORDERS.items():
        s, stages = _stages(doc, "selectivity", curve)
        optimized = [h for h in s["curves"][curve]["history"] if h["stage"] == "optimized"]
        assert optimized and all(h["options"]["filter_order"] == list(order) for h in optimized)
        assert all(h["options"]["filter_mode"] == "branch" for h in optimized)
    assert "optimized" not in _stages(doc, "selectivity", "generic")[1]


def test_replay_stream_shifts_event_times_and_logs_pulls():
    n = 5 * 64_000 + 3_000
    table = scenarios.generate_range(n, batch_rows=64_000)
    stream = adaptive.ReplayStream(table, 2 * n + 5)
    assert stream.copies == 2 and stream.rows == 2 * n
    batches = list(stream.reader())
    times = np.concatenate([b.column(0).to_numpy() for b in batches])
    # the replayed stream has the event times of a stream generated at its full length
    assert np.array_equal(times, EPOCH_MS + np.arange(2 * n) * 1000 // 1_000_000)
    keys = np.concatenate([b.column(2).to_numpy() for b in batches])
    base = table.column("campaign_id").to_numpy()
    assert np.array_equal(keys, np.concatenate([base, base]))  # one chunk (20 batches): replayed whole
    assert [r for _, r in stream.pulls] == [0] + list(np.cumsum([b.num_rows for b in batches]))
    assert stream.stream_row(n // 3) == n // 3


def test_throughput_bins_and_record_times():
    run = {"pull_s": [0.0, 1.0, 2.0, 4.0], "pull_records": [0, 0, 2_000_000, 4_000_000]}
    rates = adaptive.throughput(run, np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
    assert rates[:4].tolist() == [0.0, 2.0, 1.0, 1.0] and np.isnan(rates[4])
    assert adaptive.record_time(run, 3_000_000) == 3.0
