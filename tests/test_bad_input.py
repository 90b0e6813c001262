"""Bad input never crashes: clear errors naming source, column and row, or correct empty results.

The dangerous cases (corrupt buffers) run in a subprocess so that a crash would be a test failure
rather than the end of the test session.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.windows import TumblingEventTimeWindows

TEN_MS = TumblingEventTimeWindows.of(Time.milliseconds(10))


def window_count(stream):
    return stream.key_by("k").window(TEN_MS).aggregate(n=agg.count())


def test_null_timestamp_names_source_column_and_row():
    batches = [pa.record_batch({"ts": pa.array([1, 2], pa.int64()), "k": [1, 1]}),
               pa.record_batch({"ts": pa.array([3, None, 5], pa.int64()), "k": [1, 1, 1]})]
    q = window_count(gz.StreamEnvironment().from_arrow(batches, timestamp="ts"))
    with pytest.raises(gz.BadInputError, match=r"arrow#\d+: column 'ts': null event timestamp in batch 1, row 1"):
        q.execute_and_collect()


def test_batch_with_other_schema_is_rejected_naming_the_column():
    batches = [pa.record_batch({"ts": pa.array([1], pa.int64()), "k": [1]}),
               pa.record_batch({"ts": pa.array([2], pa.int64()), "k": [1.5]})]
    q = window_count(gz.StreamEnvironment().from_arrow(iter(batches), timestamp="ts"))
    with pytest.raises(gz.BadInputError, match="batch 1: column 'k' has type double, expected int64"):
        q.execute_and_collect()


def test_empty_and_zero_row_batches_give_empty_or_correct_results():
    schema = pa.schema([("ts", pa.int64()), ("k", pa.int64())])
    empty = pa.RecordBatch.from_pylist([], schema=schema)
    out = window_count(gz.StreamEnvironment().from_arrow([empty, empty], timestamp="ts")).execute_and_collect()
    assert out.num_rows == 0
    assert out.schema.names == ["k", "window_start", "window_end", "n"]
    data = pa.RecordBatch.from_pylist([{"ts": 3, "k": 7}], schema=schema)
    out = window_count(gz.StreamEnvironment().from_arrow([empty, data, empty], timestamp="ts")).execute_and_collect()
    assert out.to_pylist() == [{"k": 7, "window_start": 0, "window_end": 10, "n": 1}]
    stateless = gz.StreamEnvironment().from_arrow([empty], timestamp="ts").filter(col("k") > 0)
    assert stateless.execute_and_collect().num_rows == 0


def test_int64_sum_overflow_is_reported_not_wrapped():
    big = (1 << 62)
    t = pa.table({"ts": pa.array([1, 2, 3], pa.int64()), "k": [1, 1, 1], "v": [big, big, big]})
    q = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(TEN_MS).aggregate(s=agg.sum("v"))
    with pytest.raises(AggregateOverflowError, match="'s'"):
        q.execute_and_collect()


def test_intermediate_overflow_that_comes_back_is_exact():
    big = (1 << 63) - 1
    t = pa.table({"ts": pa.array([1, 2, 3], pa.int64()), "k": [1, 1, 1], "v": [big, big, -big]})
    q = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(TEN_MS).aggregate(s=agg.sum("v"))
    assert q.execute_and_collect()["s"].to_pylist() == [big]


def test_corrupt_string_offsets_give_an_error_not_a_crash(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, pyarrow as pa, grizzly_py as gz
        from grizzly_py import col
        offsets = pa.py_buffer(np.array([0, 5, 2], dtype=np.int32).tobytes())  # row 0 ends past the data
        data = pa.py_buffer(b"ab")
        s = pa.Array.from_buffers(pa.string(), 2, [None, offsets, data])
        batch = pa.RecordBatch.from_arrays([pa.array([1, 2], pa.int64()), s], names=["ts", "s"])
        try:
            gz.StreamEnvironment().from_arrow([batch], timestamp="ts").filter(col("s") == "ab").execute_and_collect()
        except (gz.BadInputError, ValueError) as e:
            print("ERROR:", e)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR:" in proc.stdout
    assert "'s'" in proc.stdout or "string" in proc.stdout


def test_sinks_write_parquet_and_csv(tmp_path):
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    t = pa.table({"ts": pa.array([1, 2, 15], pa.int64()), "k": [1, 2, 1]})
    env = gz.StreamEnvironment()
    q = window_count(env.from_arrow(t, timestamp="ts"))
    q.sink_to_parquet(tmp_path / "out.parquet")
    q.sink_to_csv(tmp_path / "out.csv")
    q.collect("mem")
    result = env.execute()
    expected = result["mem"]
    assert expected.num_rows == 3
    assert pq.read_table(tmp_path / "out.parquet").equals(expected)
    assert pcsv.read_csv(tmp_path / "out.csv").to_pylist() == expected.to_pylist()
    assert not list(tmp_path.glob("*.inprogress"))


def test_metrics_count_every_record():
    t = pa.table({"ts": pa.array([1, 25, 3, 40], pa.int64()), "k": [1, 2, 1, 2], "v": [1, -1, 1, 1]})
    env = gz.StreamEnvironment()
    src = env.from_arrow(t.to_batches(max_chunksize=2), timestamp="ts")
    window_count(src.filter(col("v") > 0)).collect("out")
    m = env.execute().metrics
    assert m["records_in"] == 4
    assert m["filtered_records"] == 1
    assert m["late_records"] == 1  # ts=3 arrives after the watermark passed 9 (max 25 - 0 - 1 = 24)
    assert m["records_in"] == m["filtered_records"] + m["late_records"] + 2


def test_one_shot_iterator_feeds_every_sink():
    batches = [pa.record_batch({"ts": pa.array([i], pa.int64()), "k": [i % 2]}) for i in range(5)]
    env = gz.StreamEnvironment()
    src = env.from_arrow(iter(batches), timestamp="ts")
    src.filter(col("k") == 1).collect("odd")
    window_count(src).collect("counts")
    result = env.execute()
    assert result["odd"]["ts"].to_pylist() == [1, 3]
    assert sum(result["counts"]["n"].to_pylist()) == 5
    assert result.metrics["records_in"] == 5  # read once
    assert [q["records_in"] for q in result.metrics["queries"]] == [5, 5]


def test_batches_with_different_dictionaries_resolve_literals_per_dictionary():
    def batch(ts, codes, dictionary):
        arr = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(dictionary))
        return pa.record_batch({"ts": pa.array(ts, pa.int64()), "kind": arr})
    batches = [batch([1, 2], [0, 1], ["view", "click"]),
               batch([3, 4], [0, 1], ["click", "view"]),        # same size, other order
               batch([5, 6], [0, 0], ["purchase", "view"]),
               batch([7, 8], [0, 1, ][:2], ["view", "view"]),   # a dictionary with duplicates
               batch([9, 10], [1, 0], ["view", "click"]),       # equal to the first (other buffers)
               batch([11, 12], [0, 1], ["click", "view"]),      # and to the second, after it
               batch([13, 14], [1, 1], ["view", "view"])]       # duplicates again
    views = [1, 4, 7, 8, 10, 12, 13, 14]
    out = gz.StreamEnvironment().from_arrow(batches, timestamp="ts").filter(col("kind") == "view")
    assert out.execute_and_collect()["ts"].to_pylist() == views
    # a window kernel (the source skips its check of clean dictionaries: the loop checks indices)
    counts = out.window_all(TEN_MS).aggregate(n=agg.count()).execute_and_collect()
    assert counts["n"].to_pylist() == [sum(t < 10 for t in views), sum(t >= 10 for t in views)]


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("first, second", [(pa.int8(), pa.int32()), (pa.int32(), pa.int8())])
def test_columns_of_other_index_types_with_equal_unclean_dictionaries(first, second, shared):
    """Two dictionary columns whose dictionaries are equal (or one and the same) and hold a
    duplicate and a null, with other index types: each column's indices are remapped in its own
    index type (a remap made for one column read as the other's read past its buffer, or
    miscounted)."""
    from grizzly_py import reference
    words = pa.array(["x", "y", "x", None])
    other = words if shared else pa.array(words.to_pylist())
    batch = pa.record_batch({"ts": pa.array(range(6), pa.int64()),
                             "a": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, 0, 3], first), words),
                             "b": pa.DictionaryArray.from_arrays(pa.array([1, 1, 1, 0, 1, 0], second), other)})
    for adaptive in (False, True):
        env = gz.StreamEnvironment(adaptive=adaptive)
        src = env.from_arrow([batch, batch], timestamp="ts").filter(col("b") == "y")
        for q in (src.key_by("a").window(TEN_MS).aggregate(n=agg.count()),
                  src.window_all(TEN_MS).aggregate(n=agg.count(col("a")))):
            out = q.execute_and_collect()
            expected = reference.evaluate(q.node)
            assert sorted(map(str, out.to_pylist())) == sorted(map(str, expected.cast(out.schema).to_pylist()))


@pytest.mark.parametrize("index_type", [pa.int8(), pa.uint16(), pa.int32(), pa.int64()])
def test_dictionaries_with_duplicates_or_null_entries(index_type):
    from grizzly_py import reference
    codes = pa.array(np.arange(12) % 5, index_type)
    kind = pa.DictionaryArray.from_arrays(codes, pa.array(["a", "b", "a", None, "c"]))
    batch = pa.record_batch([pa.array(range(12), pa.int64()), kind], names=["ts", "k"])
    src = gz.StreamEnvironment().from_arrow([batch], timestamp="ts")
    for q in (src.filter(col("k") == "a"), src.with_columns(n=col("k").is_null(), o=col("k") != "c"),
              src.window_all(TEN_MS).aggregate(c=agg.count("k"), d=agg.count_distinct("ts"))):
        out = q.execute_and_collect()
        expected = reference.evaluate(q.node)
        assert out.to_pylist() == expected.cast(out.schema).to_pylist()


def test_event_times_at_the_int64_limits_are_rejected_not_wrapped():
    for ts in (-(1 << 63), (1 << 63) - 1):
        t = pa.table({"ts": pa.array([0, ts], pa.int64()), "k": [1, 1]})
        q = window_count(gz.StreamEnvironment().from_arrow(t, timestamp="ts"))
        with pytest.raises(gz.BadInputError, match="column 'ts'|col\\('ts'\\).*batch 0, row 1"):
            q.execute_and_collect()
    with pytest.raises(ValueError, match="at most"):
        TumblingEventTimeWindows.of(Time.milliseconds(1 << 60))


def test_identity_query_over_required_parquet_columns(tmp_path):
    import pyarrow.parquet as pq
    schema = pa.schema([pa.field("ts", pa.int64(), nullable=False), pa.field("x", pa.int64())])
    pq.write_table(pa.table({"ts": [1, 2], "x": [3, 4]}, schema=schema), tmp_path / "in.parquet")
    out = gz.StreamEnvironment().from_parquet(tmp_path / "in.parquet", timestamp="ts").execute_and_collect()
    assert out.to_pylist() == [{"ts": 1, "x": 3}, {"ts": 2, "x": 4}]


def test_failed_job_leaves_no_partial_file(tmp_path):
    big = (1 << 62)
    t = pa.table({"ts": pa.array([1, 2], pa.int64()), "k": [1, 1], "v": [big, big]})
    q = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(TEN_MS).aggregate(s=agg.sum("v"))
    q.sink_to_parquet(tmp_path / "out.parquet")
    with pytest.raises(AggregateOverflowError):
        q.env.execute()
    assert not list(tmp_path.iterdir())


def test_a_consumed_one_shot_source_says_so_and_a_failed_job_can_run_again():
    batches = [pa.record_batch({"ts": pa.array([1], pa.int64()), "k": [1]})]
    q = gz.StreamEnvironment().from_arrow(iter(batches), timestamp="ts").filter(col("k") > 0)
    assert q.execute_and_collect().num_rows == 1
    with pytest.raises(gz.BadInputError, match="one-shot iterator"):
        q.execute_and_collect()
    env = gz.StreamEnvironment()
    t = pa.table({"ts": pa.array([1, 2], pa.int64()), "k": [1, 1], "v": [1 << 62, 1 << 62]})
    env.from_arrow(t, timestamp="ts").key_by("k").window(TEN_MS).aggregate(s=agg.sum("v")).collect("out")
    for _ in range(2):  # the failed job stays registered: running it again fails the same way
        with pytest.raises(AggregateOverflowError):
            env.execute()


def test_strings_in_named_arguments_are_column_names():
    t = pa.table({"ts": pa.array([1, 2], pa.int64()), "price": [1.5, 2.5]})
    src = gz.StreamEnvironment().from_arrow(t, timestamp="ts")
    assert src.select(cost="price").execute_and_collect().to_pylist() == [{"cost": 1.5}, {"cost": 2.5}]
    assert src.with_columns(p2="price").execute_and_collect()["p2"].to_pylist() == [1.5, 2.5]


def test_count_window_sum_overflow_is_an_aggregate_overflow():
    t = pa.table({"ts": pa.array([1, 2], pa.int64()), "k": [1, 1], "v": [(1 << 63) - 1, 1]})
    q = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").count_window(2).aggregate(s=agg.sum("v"))
    with pytest.raises(AggregateOverflowError, match="'s'"):
        q.execute_and_collect()


def test_null_entries_of_a_string_key_dictionary_are_one_null_group():
    from grizzly_py import reference
    k = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 2, 0], pa.int32()), pa.array(["x", None, "x"]))
    t = pa.table({"ts": pa.array(range(5), pa.int64()), "k": k})
    q = gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(TEN_MS).aggregate(n=agg.count())
    out = q.execute_and_collect()
    assert [(r["k"], r["n"]) for r in out.to_pylist()] == [("x", 3), (None, 2)]
    assert out.to_pylist() == reference.evaluate(q.node).cast(out.schema).to_pylist()


def test_sliding_windows_near_the_lowest_event_times():
    from grizzly_py import reference
    from grizzly_py.windows import SlidingEventTimeWindows
    low = -(1 << 63) + 300
    batches = [pa.record_batch({"ts": pa.array([low], pa.int64())}), pa.record_batch({"ts": pa.array([0], pa.int64())})]
    q = (gz.StreamEnvironment().from_arrow(batches, timestamp="ts",
                                          watermark=gz.WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(298)))
         .window_all(SlidingEventTimeWindows.of(Time.milliseconds(100), Time.milliseconds(10))).aggregate(n=agg.count()))
    assert q.execute_and_collect().to_pylist() == reference.evaluate(q.node).to_pylist()


@pytest.mark.parametrize("index_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64()])
def test_dictionary_index_checks_read_negative_indices_and_skip_null_slots(index_type):
    """A negative index is outside the dictionary; an out-of-range value under a null slot is not
    an index at all (Arrow leaves it undefined) and must not be reported."""
    width = index_type.bit_width // 8
    dictionary = pa.array(["a", "b"])

    def batch(values, validity=None):
        raw = np.array(values, dtype=f"i{width}").tobytes()
        d = pa.DictionaryArray.from_buffers(pa.dictionary(index_type, pa.string()), len(values),
                                            [validity, pa.py_buffer(raw)], dictionary)
        return pa.record_batch([pa.array(range(len(values)), pa.int64()), d], names=["ts", "k"])

    negative = gz.StreamEnvironment().from_arrow([batch([0, -1, 1])], timestamp="ts").filter(col("k") == "a")
    with pytest.raises(gz.BadInputError, match="dictionary index -1 is outside the dictionary of 2 values in "
                                               "batch 0, row 1"):
        negative.execute_and_collect()
    null_slot = pa.py_buffer(bytes([0b101]))  # row 1 is null, its index 99 is garbage
    ok = gz.StreamEnvironment().from_arrow([batch([0, 99, 1], null_slot)], timestamp="ts").filter(col("k") == "a")
    assert ok.execute_and_collect().num_rows == 1


@pytest.mark.parametrize("parallelism", [1, 2])
def test_window_kernels_check_dictionary_indices_in_the_fused_loop(monkeypatch, parallelism):
    """A source read only by window kernels skips the Python pass over dictionary indices: the
    compiled loop checks each index it reads (null slots excepted) and names column, batch and row."""
    from grizzly_py.sources import Source
    calls = []
    real = Source._check_dictionary_indices
    monkeypatch.setattr(Source, "_check_dictionary_indices", lambda self, *a: calls.append(a) or real(self, *a))
    dictionary = pa.array(["a", "b"])

    def batch(values, validity=None, start=0):
        raw = np.array(values, dtype="i4").tobytes()
        d = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.string()), len(values),
                                            [validity, pa.py_buffer(raw)], dictionary)
        return pa.record_batch([pa.array(range(start, start + len(values)), pa.int64()), d,
                                pa.array([1] * len(values), pa.int64())], names=["ts", "k", "g"])

    def query(batches):
        env = gz.StreamEnvironment(parallelism=parallelism)
        return env.from_arrow(batches, timestamp="ts").filter(col("k") == "a").key_by("g") \
            .window(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(n=agg.count())
    batches = [batch([0, 1]), batch([1, 0, -7, 0], start=2)]
    with pytest.raises(gz.BadInputError, match="column 'k': dictionary index -7 is outside the dictionary of 2 "
                                               "values in batch 1, row 2"):
        query(batches).execute_and_collect()
    null_slot = pa.py_buffer(bytes([0b101]))  # row 1 is null: its index 99 is garbage, not an error
    assert query([batch([0, 99, 0], null_slot)]).execute_and_collect().column("n").to_pylist() == [2]
    assert calls == []  # the kernels checked, not Python
    # a dictionary with duplicates after a clean one is checked in Python (its indices are remapped)
    dictionary = pa.array(["a", "a"])
    with pytest.raises(gz.BadInputError, match="dictionary index 5 is outside the dictionary of 2 values "
                                               "in batch 1, row 1"):
        query([batches[0], batch([0, 5], start=2)]).execute_and_collect()
    assert len(calls) == 1
