"""Parquet datasets (``datasets.py``): a directory of part files, a glob and a hive-partitioned
directory read as one source, one batch per row group in path order -- the same results as the
same batches given to ``from_arrow`` -- clear errors for paths without Parquet data, and Spark
splits sized from the cluster's cores rather than capped at one per core."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.windows import TumblingEventTimeWindows


def _part(i: int, n: int = 60) -> pa.Table:
    rng = np.random.default_rng(i)
    ts = 1000 * i + np.sort(rng.integers(0, 1000, n))
    return pa.table({"ts": pa.array(ts, pa.int64()), "k": pa.array(rng.choice(["a", "b", "c"], n).tolist()),
                     "v": pa.array(rng.integers(0, 100, n))})


def _query(stream, key="k"):
    return (stream.filter(col("v") > 10).key_by(key)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(500))).aggregate(n=agg.count(), s=agg.sum("v")))


def _run(stream_of, key="k") -> pa.Table:
    env = gz.StreamEnvironment()
    return _query(stream_of(env), key).execute_and_collect()


def _write(directory, parts: dict[str, pa.Table]):
    for rel, table in parts.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, row_group_size=25)


def _batches(tables: list[pa.Table], extra: list[dict] | None = None) -> list[pa.RecordBatch]:
    """The row groups of ``tables`` (25 rows each) as batches, with constant ``extra`` columns."""
    out = []
    for i, t in enumerate(tables):
        for b in t.to_batches(max_chunksize=25):
            for name, value in (extra[i] if extra else {}).items():
                b = b.append_column(name, pa.array([value] * b.num_rows, pa.int32()))
            out.append(b)
    return out


def test_directory_of_part_files_is_its_row_groups_in_path_order(tmp_path):
    parts = {f"part-{i:03d}.parquet": _part(i) for i in (2, 0, 1)}
    _write(tmp_path / "d", parts)
    (tmp_path / "d" / "_SUCCESS").write_text("")
    (tmp_path / "d" / ".part-000.parquet.crc").write_text("not parquet")
    expected = _run(lambda env: env.from_arrow(_batches([_part(0), _part(1), _part(2)]), timestamp="ts"))
    out = _run(lambda env: env.from_parquet(tmp_path / "d", timestamp="ts"))
    assert out.equals(expected)
    assert out.num_rows > 0


def test_glob_reads_the_matching_files(tmp_path):
    _write(tmp_path / "g", {"a/x-0.parquet": _part(0), "a/y-1.parquet": _part(1), "b/x-2.parquet": _part(2)})
    expected = _run(lambda env: env.from_arrow(_batches([_part(0), _part(2)]), timestamp="ts"))
    assert _run(lambda env: env.from_parquet(str(tmp_path / "g" / "*" / "x-*.parquet"), timestamp="ts")).equals(expected)


def test_hive_partitions_are_columns(tmp_path):
    _write(tmp_path / "h", {"day=1/p.parquet": _part(0), "day=2/p.parquet": _part(1)})
    source = gz.StreamEnvironment().from_parquet(tmp_path / "h", timestamp="ts").node.source
    assert source.arrow_schema.names == ["ts", "k", "v", "day"]
    expected = _run(lambda env: env.from_arrow(_batches([_part(0), _part(1)], [{"day": 1}, {"day": 2}]),
                                               timestamp="ts"), key="day")
    out = _run(lambda env: env.from_parquet(tmp_path / "h", timestamp="ts"), key="day")
    assert out.equals(expected)
    assert set(out.column("day").to_pylist()) == {1, 2}


def test_paths_without_parquet_data_are_named(tmp_path):
    env = gz.StreamEnvironment()
    with pytest.raises(FileNotFoundError, match="no such file or directory") as e:
        env.from_parquet(tmp_path / "missing")
    assert "missing" in str(e.value)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        env.from_parquet(str(tmp_path / "*.parquet"))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_text("")
    with pytest.raises(gz.BadInputError, match="empty: holds no Parquet files"):
        env.from_parquet(tmp_path / "empty")
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "x.csv").write_text("ts\n1\n")
    with pytest.raises(gz.BadInputError, match="not a readable Parquet file"):
        env.from_parquet(tmp_path / "csv")


@pytest.mark.parametrize("other", [{"ts": [5], "w": [1]}, {"ts": [5], "v": ["x"]}])
def test_a_part_file_of_another_schema_is_named(tmp_path, other):
    _write(tmp_path / "m", {"a.parquet": _part(0)})
    pq.write_table(pa.table(other), tmp_path / "m" / "b.parquet")
    with pytest.raises(gz.BadInputError, match=r"b\.parquet: (has columns|column 'v' has type string)"):
        gz.StreamEnvironment().from_parquet(tmp_path / "m", timestamp="ts").execute_and_collect()


def test_a_file_uri_reads_as_its_path(tmp_path):
    _write(tmp_path / "u", {"p.parquet": _part(0)})
    expected = _run(lambda env: env.from_parquet(tmp_path / "u", timestamp="ts"))
    assert _run(lambda env: env.from_parquet(f"file://{tmp_path / 'u'}", timestamp="ts")).equals(expected)


def test_spark_splits_follow_the_cluster_cores_and_row_groups(tmp_path):
    from grizzly_py.spark.inputs import plan_splits, split_target
    _write(tmp_path / "s", {f"part-{i}.parquet": _part(i, n=100) for i in range(5)})  # 20 row groups
    source = gz.StreamEnvironment().from_parquet(tmp_path / "s", timestamp="ts").node.source
    splits = plan_splits(source, split_target(2), ("ts", "v"))
    assert len(splits) == 6  # 3 per core, not one per core
    assert [g.number for sp in splits for g in sp.row_groups] == list(range(20))
    assert len(plan_splits(source, split_target(16), None)) == 20  # at most one per row group


def test_an_orc_directory_is_its_files_stripes_in_path_order(tmp_path):
    """ORC (read for ``from_spark`` scans of ORC files): each stripe is a row group, read in the
    asked column order; the rows estimated per stripe add up to each file's rows."""
    import pyarrow.orc as orc
    from grizzly_py.datasets import BadDatasetError, resolve
    (tmp_path / "o").mkdir()
    big = pa.table({"ts": pa.array(np.arange(200_000), pa.int64()),
                    "k": pa.array([f"key-{i % 977}" for i in range(200_000)]),
                    "v": pa.array(np.arange(200_000) % 100)})
    orc.write_table(big, tmp_path / "o" / "part-1.orc", stripe_size=64 << 10)
    orc.write_table(_part(0), tmp_path / "o" / "part-0.orc")
    (tmp_path / "o" / "_SUCCESS").write_text("")
    dataset = resolve(str(tmp_path / "o"), "orc")
    groups = dataset.row_groups()
    assert [g.file for g in groups][0] == 0 and len({g.file for g in groups}) == 2
    assert len([g for g in groups if g.file == 1]) > 1  # several stripes
    assert [sum(g.rows for g in groups if g.file == f) for f in (0, 1)] == [60, 200_000]
    read = [dataset.read(dataset.open(g.file), g, ["v", "ts"]) for g in groups]
    assert all(t.schema.names == ["v", "ts"] for t in read)
    assert pa.concat_tables(read).equals(pa.concat_tables([_part(0), big]).select(["v", "ts"]))
    with pytest.raises(BadDatasetError, match="not a readable ORC file"):
        (tmp_path / "p").mkdir()
        pq.write_table(_part(0), tmp_path / "p" / "x.orc")
        resolve(str(tmp_path / "p"), "orc")
