"""File sources, timestamp types, and the command line."""

import json
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.cli import main
from grizzly_py.cli_common import split_target
from grizzly_py.windows import TumblingEventTimeWindows

TEN_MS = TumblingEventTimeWindows.of(Time.milliseconds(10))


@pytest.fixture
def table():
    return pa.table({"ts": pa.array([1, 4, 12, 15, 33], pa.int64()), "k": [1, 2, 1, 1, 2],
                     "v": [1.0, 2.0, 3.0, 4.0, 5.0]})


def counts(stream):
    return stream.key_by("k").window(TEN_MS).aggregate(n=agg.count(), s=agg.sum("v")).execute_and_collect()


def test_parquet_source_one_batch_per_row_group(tmp_path, table):
    path = tmp_path / "in.parquet"
    pq.write_table(table, path, row_group_size=2)
    assert pq.ParquetFile(path).num_row_groups == 3
    out = counts(gz.StreamEnvironment().from_parquet(path, timestamp="ts"))
    assert out.to_pylist() == [
        {"k": 1, "window_start": 0, "window_end": 10, "n": 1, "s": 1.0},
        {"k": 2, "window_start": 0, "window_end": 10, "n": 1, "s": 2.0},
        {"k": 1, "window_start": 10, "window_end": 20, "n": 2, "s": 7.0},
        {"k": 2, "window_start": 30, "window_end": 40, "n": 1, "s": 5.0}]


def test_csv_source_with_and_without_schema(tmp_path, table):
    path = tmp_path / "in.csv"
    pcsv.write_csv(table, path)
    inferred = counts(gz.StreamEnvironment().from_csv(path, timestamp="ts"))
    typed = counts(gz.StreamEnvironment().from_csv(path, schema={"ts": "int64", "k": "int64", "v": "double"},
                                                   timestamp="ts"))
    assert inferred.to_pylist() == typed.to_pylist() == counts(gz.StreamEnvironment().from_arrow(table, timestamp="ts")).to_pylist()


def test_malformed_csv_names_the_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("ts,k\n1,2\nnot-a-number,3\n")
    q = gz.StreamEnvironment().from_csv(path, schema={"ts": "int64", "k": "int64"}, timestamp="ts").filter(col("k") > 0)
    with pytest.raises(gz.BadInputError, match="bad.csv"):
        q.execute_and_collect()


@pytest.mark.parametrize("unit, scale", [("s", 1), ("ms", 1000), ("us", 1000_000), ("ns", 1000_000_000)])
def test_arrow_timestamp_event_time_in_any_unit(unit, scale):
    seconds = np.array([0, 1, 11, 12, 25], dtype=np.int64)
    t = pa.table({"ts": pa.array(seconds * scale, pa.timestamp(unit)), "k": [1, 1, 1, 2, 1]})
    out = (gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k")
           .window(TumblingEventTimeWindows.of(Time.seconds(10))).aggregate(n=agg.count()).execute_and_collect())
    assert out.schema.field("window_start").type == pa.timestamp(unit)
    starts = [int(x) for x in pa.compute.cast(out["window_start"], pa.int64()).to_pylist()]
    assert starts == [0, 10 * scale, 10 * scale, 20 * scale]
    assert out["n"].to_pylist() == [2, 1, 1, 1]


def test_late_records_are_dropped_and_counted():
    batches = [pa.record_batch({"ts": pa.array(v, pa.int64()), "k": [1] * len(v)})
               for v in ([5, 25], [9, 31], [12])]  # wm after batch 0: 24; 9 is late, 12 too after wm 30
    env = gz.StreamEnvironment()
    src = env.from_arrow(batches, timestamp="ts", watermark=WatermarkStrategy.for_monotonous_timestamps())
    src.key_by("k").window(TEN_MS).aggregate(n=agg.count()).collect("out")
    result = env.execute()
    assert result["out"].to_pylist() == [
        {"k": 1, "window_start": 0, "window_end": 10, "n": 1},
        {"k": 1, "window_start": 20, "window_end": 30, "n": 1},
        {"k": 1, "window_start": 30, "window_end": 40, "n": 1}]
    assert result.metrics["late_records"] == 2


QUERY_FILE = textwrap.dedent("""
    import pyarrow as pa
    import grizzly_py as gz
    from grizzly_py import col, agg, Time
    from grizzly_py.windows import TumblingEventTimeWindows

    def query(env):
        t = pa.table({"ts": pa.array([1, 2, 15], pa.int64()), "kind": ["view", "click", "view"], "k": [1, 1, 2]})
        return (env.from_arrow(t, timestamp="ts").filter(col("kind") == "view").key_by("k")
                .window(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(n=agg.count()))

    stateless = gz.StreamEnvironment().from_arrow(
        pa.table({"ts": pa.array([1], pa.int64()), "x": [2.5]}), timestamp="ts").with_columns(y=col("x") * 2)
""")


@pytest.fixture
def query_file(tmp_path):
    path = tmp_path / "q.py"
    path.write_text(QUERY_FILE)
    return str(path)


def test_cli_explain_shows_every_phase(query_file):
    runner = CliRunner()
    out = runner.invoke(main, ["explain", query_file]).output
    assert "WindowAggregate[keys=[k]" in out and "Pipeline 0" in out
    ir = runner.invoke(main, ["explain", query_file, "--ir"]).output
    assert "define i64 @p0_generic_process_nonnull" in ir and "@gz_ht_upsert" in ir
    opt = runner.invoke(main, ["explain", query_file, "--ir-optimized"])
    assert opt.exit_code == 0 and "unit process_nonnull" in opt.output
    asm = runner.invoke(main, ["explain", f"{query_file}:stateless", "--asm"])
    assert asm.exit_code == 0 and "p0_generic_process_nonnull:" in asm.output
    bad = runner.invoke(main, ["explain", f"{query_file}:nope"])
    assert bad.exit_code != 0 and "defines no 'nope'" in bad.output


def test_cli_target_splits_at_the_last_colon(tmp_path):
    """FILE:NAME with a ':' in FILE's path: the split is at the last ':', and only when a Python
    identifier follows it (a Windows drive or a file named with ':' stays whole)."""
    folder = tmp_path / "runs:2024"
    folder.mkdir()
    path = folder / "q.py"
    path.write_text(QUERY_FILE)
    runner = CliRunner()
    out = runner.invoke(main, ["explain", str(path), "--plan"])
    assert out.exit_code == 0 and "WindowAggregate[keys=[k]" in out.output, out.output
    out = runner.invoke(main, ["run", f"{path}:stateless", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["records_out"] == 1
    named = folder / "q:v2"  # a file whose name ends in ':' and an identifier
    named.write_text(QUERY_FILE)
    assert split_target(str(named)) == (str(named), "query")
    assert split_target(r"C:\work\q.py") == (r"C:\work\q.py", "query")
    assert split_target(r"C:\work\q.py:views") == (r"C:\work\q.py", "views")
    assert split_target("a:b/q.py:2x") == ("a:b/q.py:2x", "query")


def test_cli_help_says_the_file_runs_as_python():
    runner = CliRunner()
    for command in ("run", "explain"):
        out = runner.invoke(main, [command, "--help"])
        assert "runs as Python (trusted code)" in " ".join(out.output.split()), out.output


def test_cli_run_prints_result_and_metrics(query_file):
    runner = CliRunner()
    out = runner.invoke(main, ["run", query_file, "--trace"])
    assert out.exit_code == 0, out.output
    assert "result: 2 rows" in out.output and "records/s" in out.output and "at record" in out.output \
        and "generic" in out.output
    js = runner.invoke(main, ["run", query_file, "--json"])
    metrics = json.loads(js.output)
    assert metrics["records_in"] == 3 and metrics["records_out"] == 2 and metrics["filtered_records"] == 1


def test_cli_run_configures_parallelism_and_window_state(query_file):
    runner = CliRunner()
    js = runner.invoke(main, ["run", query_file, "--parallelism", "2", "--window-state", "shared", "--json"])
    assert js.exit_code == 0, js.output
    metrics = json.loads(js.output)
    assert metrics["parallelism"] == 2 and metrics["records_out"] == 2
    assert metrics["queries"][0]["pipelines"][0]["window_state"] == "shared"
    bad = runner.invoke(main, ["run", query_file, "--parallelism", "0"])
    assert bad.exit_code != 0 and "parallelism must be a positive int" in bad.output
