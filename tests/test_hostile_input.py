"""The hostile input catalogue (docs/semantics.md, "Hostile input"): each entry gives a clear error
that names the source, column and row, or a documented handling -- never a crash or silent
corruption.

Every entry runs in a subprocess (``sys.executable -c``), so that a segfault or an abort is a test
failure, not the end of the test session. Entries are batched: one subprocess per group runs many
small cases, each printing one JSON line (its result, or its exception's type and message); a
crash names the case that was running. The tests then check each case's line.

Opt-in variants:

- ``GRIZZLY_HOSTILE_LARGE=1``: 10M distinct keys through a tumbling window (~20 s, ~1.6 GB on a
  2-core machine; the default variant has 1M).
- ``GRIZZLY_HOSTILE_FUZZ=<examples>``: the random hostile-batch fuzzer runs that many examples
  (default 6), e.g. ``GRIZZLY_HOSTILE_FUZZ=2000 pytest tests/test_hostile_input.py -k fuzz``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from marks import slow

TESTS = Path(__file__).resolve().parent

PRELUDE = """
import json, math, os, sys, traceback
sys.path.insert(0, {tests!r})
import numpy as np, pyarrow as pa, pyarrow.compute as pc
import grizzly_py as gz
from grizzly_py import col, agg, Time, WatermarkStrategy, reference
from grizzly_py.aggregates import AggregateOverflowError
from grizzly_py.types import SchemaError
from grizzly_py.windows import TumblingEventTimeWindows
from strategies import assert_tables_equal
W = TumblingEventTimeWindows.of(Time.milliseconds(10))
BOUNDED = lambda ms: WatermarkStrategy.for_bounded_out_of_orderness(Time.milliseconds(ms))
TMP = {tmp!r}

def plain(t):
    # timestamps as int64: far ones are beyond Python's datetime
    return pa.table([c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in t.columns],
                    names=t.column_names)

def same_as_reference(build, parallelism=(1, 3)):
    '''Run ``build(env)`` (a DataStream) on the engine at each parallelism and on the reference;
    the results and late-record counts must be equal.'''
    expected, ref_metrics = reference.run(build(gz.StreamEnvironment()).node)
    for p in parallelism:
        env = gz.StreamEnvironment(parallelism=p)
        build(env).collect("out")
        result = env.execute()
        assert [f.type for f in result["out"].schema] == [f.type for f in expected.schema]
        assert_tables_equal(plain(result["out"]), plain(expected))
        assert result.metrics["late_records"] == ref_metrics["late_records"], (p, result.metrics, ref_metrics)
    return {{"rows": expected.num_rows, "late": ref_metrics["late_records"],
             "table": json.loads(json.dumps(plain(expected).to_pylist(), default=repr).replace("NaN", '"NaN"')
                                 .replace("-Infinity", '"-inf"').replace("Infinity", '"inf"'))
                      if expected.num_rows <= 50 else None}}

def run_case(name, fn):
    print("START", name, flush=True)
    try:
        out = {{"ok": fn()}}
    except BaseException as e:
        out = {{"error": type(e).__name__, "message": str(e)[:2000]}}
    print("RESULT " + json.dumps({{"case": name, **out}}, default=repr), flush=True)
"""


def run_group(cases: dict[str, str], tmp: Path, timeout: int = 180) -> dict[str, dict]:
    """Run each case (the body of a function returning a JSON-able value) in one subprocess; a
    crash (signal, abort, non-zero exit) fails with the name of the case that was running."""
    parts = [PRELUDE.format(tests=str(TESTS), tmp=str(tmp))]
    for name, body in cases.items():
        fname = f"case_{len(parts)}"
        parts.append(f"def {fname}():\n{textwrap.indent(textwrap.dedent(body).strip(), '    ')}\n"
                     f"run_case({name!r}, {fname})\n")
    script = "\n".join(parts)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          cwd=str(TESTS.parent))
    results, running = {}, None
    for line in proc.stdout.splitlines():
        if line.startswith("START "):
            running = line[6:]
        elif line.startswith("RESULT "):
            r = json.loads(line[7:])
            results[r["case"]] = r
            running = None
    assert proc.returncode == 0 and running is None, (
        f"the subprocess died (exit {proc.returncode}) while running case {running!r}:\n{proc.stderr[-4000:]}")
    return results


def ok(r: dict):
    assert "ok" in r, f"case {r['case']} failed: {r.get('error')}: {r.get('message')}"
    return r["ok"]


def error(r: dict, kind: str, *fragments: str) -> str:
    assert "error" in r, f"case {r['case']} gave {r.get('ok')!r}, expected a {kind}"
    assert r["error"] == kind, f"case {r['case']}: {r['error']}: {r['message']}"
    for f in fragments:
        assert f in r["message"], f"case {r['case']}: {f!r} not in {r['message']!r}"
    return r["message"]


# ==============================================================================================
# Group 1: in-memory Arrow input (schemas, nulls, NaN, time, batch shapes)
# ==============================================================================================
ARROW_CASES = {
    "schema_mismatch": """
        batches = [pa.record_batch({"ts": pa.array([1], pa.int64()), "k": [1]}),
                   pa.record_batch({"ts": pa.array([2], pa.int64()), "key": [1]})]
        gz.StreamEnvironment().from_arrow(iter(batches), timestamp="ts").key_by("k").window(W) \\
            .aggregate(n=agg.count()).execute_and_collect()
    """,
    "wrong_column_type": """
        batches = [pa.record_batch({"ts": pa.array([1], pa.int64()), "k": [1]}),
                   pa.record_batch({"ts": pa.array([2], pa.int64()), "k": ["one"]})]
        gz.StreamEnvironment().from_arrow(iter(batches), timestamp="ts").key_by("k").window(W) \\
            .aggregate(n=agg.count()).execute_and_collect()
    """,
    "query_missing_column": """
        t = pa.table({"ts": pa.array([1], pa.int64()), "k": [1]})
        gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("nope")
    """,
    "query_wrong_type": """
        t = pa.table({"ts": pa.array([1], pa.int64()), "s": ["a"]})
        gz.StreamEnvironment().from_arrow(t, timestamp="ts").window_all(W).aggregate(x=agg.sum("s"))
    """,
    "float_timestamps": """
        t = pa.table({"ts": pa.array([1.0, float("nan")], pa.float64()), "k": [1, 1]})
        gz.StreamEnvironment().from_arrow(t, timestamp="ts")
    """,
    "null_timestamps": """
        t = pa.table({"ts": pa.array([1, 2, None], pa.int64()), "k": [1, 1, 1]})
        gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(W) \\
            .aggregate(n=agg.count()).execute_and_collect()
    """,
    "dictionary_index_out_of_range": """
        idx = pa.array([0, 1, 99, 1], pa.int32())
        d = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.string()), 4, [None, idx.buffers()[1]],
                                            pa.array(["a", "b"]))
        good = pa.record_batch([pa.array([0], pa.int64()),
                                pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array(["a", "b"]))],
                               names=["ts", "k"])
        bad = pa.record_batch([pa.array(range(1, 5), pa.int64()), d], names=["ts", "k"])
        gz.StreamEnvironment().from_arrow([good, bad], timestamp="ts").filter(col("k") == "a").execute_and_collect()
    """,
    "null_keys": """
        t = pa.table({"ts": pa.array(range(12), pa.int64()),
                      "k": pa.array([1, None, 2, None, 1, None, 3, 3, None, 1, 2, None], pa.int64()),
                      "s": ["a", None, "b", None, "a", "", None, "b", "a", None, "", None]})
        return [same_as_reference(lambda env: env.from_arrow(t.to_batches(max_chunksize=5), timestamp="ts")
                                  .key_by(*keys).window(W).aggregate(n=agg.count()))
                for keys in (["k"], ["s"], ["k", "s"])]
    """,
    "null_values": """
        t = pa.table({"ts": pa.array(range(12), pa.int64()), "k": [i % 3 for i in range(12)],
                      "v": pa.array([None if i % 3 == 2 or i % 4 == 0 else i for i in range(12)], pa.int64()),
                      "f": pa.array([None if i % 3 == 2 else i / 2 for i in range(12)], pa.float64())})
        return same_as_reference(lambda env: env.from_arrow(t.to_batches(max_chunksize=4), timestamp="ts")
                                 .key_by("k").window(W).aggregate(n=agg.count(), c=agg.count("v"), s=agg.sum("v"),
                                                                  lo=agg.min("v"), hi=agg.max("f"), a=agg.avg("f")))
    """,
    "nan_inf_values": """
        nan, inf = float("nan"), float("inf")
        vals = [1.5, nan, inf, -inf, 2.0, nan, -0.0, 0.0, inf, 3.0, -inf, nan]
        t = pa.table({"ts": pa.array(range(12), pa.int64()), "k": [i % 2 for i in range(12)],
                      "f": pa.array(vals, pa.float64())})
        return same_as_reference(lambda env: env.from_arrow(t.to_batches(max_chunksize=5), timestamp="ts")
                                 .filter(col("f") == col("f"))  # drops NaN rows (NaN != NaN)
                                 .key_by("k").window(W).aggregate(s=agg.sum("f"), lo=agg.min("f"), hi=agg.max("f"),
                                                                  n=agg.count("f"))), \\
               same_as_reference(lambda env: env.from_arrow(t, timestamp="ts").key_by("k").window(W)
                                 .aggregate(s=agg.sum("f"), lo=agg.min("f"), hi=agg.max("f"), a=agg.avg("f"),
                                            v=agg.var_pop("f")))
    """,
    "nan_inf_keys": """
        nan, inf = float("nan"), float("inf")
        keys = [nan, 1.0, -0.0, 0.0, inf, -inf, nan, None, inf, float("-nan"), 1.0, -inf]
        t = pa.table({"ts": pa.array(range(12), pa.int64()), "f": pa.array(keys, pa.float64())})
        return same_as_reference(lambda env: env.from_arrow(t.to_batches(max_chunksize=5), timestamp="ts")
                                 .key_by("f").window(W).aggregate(n=agg.count()))
    """,
    "far_timestamps": """
        year1, year9999 = -62135596800000, 253402300799999
        ts = [-(1 << 62), year1, year1 + 5, 0, year9999 - 1, year9999, 1 << 62]
        t = pa.table({"ts": pa.array(ts, pa.int64()), "k": [1, 1, 2, 1, 2, 2, 1]})
        a = same_as_reference(lambda env: env.from_arrow(t.to_batches(max_chunksize=2), timestamp="ts")
                              .key_by("k").window(W).aggregate(n=agg.count()))
        t2 = pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": [1, 1, 2, 1, 2, 2, 1]})
        b = same_as_reference(lambda env: env.from_arrow(t2, timestamp="ts").key_by("k").window(W)
                              .aggregate(n=agg.count()))
        return a["rows"], b["rows"]
    """,
    "int64_limit_timestamps": """
        t = pa.table({"ts": pa.array([0, (1 << 63) - 1], pa.int64()), "k": [1, 1]})
        gz.StreamEnvironment().from_arrow(t, timestamp="ts").key_by("k").window(W) \\
            .aggregate(n=agg.count()).execute_and_collect()
    """,
    "late_records": """
        ts = [1, 2, 30, 26, 3, 27, 55, 12, 56, 60, 41]  # 3, 12 and 41 come after their window fired
        t = pa.table({"ts": pa.array(ts, pa.int64()), "k": [1] * len(ts)})
        return same_as_reference(lambda env: env.from_arrow(t.to_batches(max_chunksize=1), timestamp="ts",
                                                            watermark=BOUNDED(5))
                                 .key_by("k").window(W).aggregate(n=agg.count()))
    """,
    "empty_input": """
        t = pa.table({"ts": pa.array([], pa.int64()), "k": pa.array([], pa.int64())})
        out = []
        for build in (lambda env: env.from_arrow(t, timestamp="ts").key_by("k").window(W).aggregate(n=agg.count()),
                      lambda env: env.from_arrow(t, timestamp="ts").filter(col("k") > 0),
                      lambda env: env.from_arrow(t, timestamp="ts").window_all(W).aggregate(s=agg.sum("k"))):
            out.append(same_as_reference(build, parallelism=(1, 2))["rows"])
        return out
    """,
    "zero_and_one_row_batches": """
        whole = pa.record_batch({"ts": pa.array([i * 3 for i in range(40)], pa.int64()),
                                 "k": [i % 3 for i in range(40)], "v": [float(i) for i in range(40)]})
        batches = []
        for i in range(40):
            batches += [whole.slice(i, 0), whole.slice(i, 1)]
        return same_as_reference(lambda env: env.from_arrow(batches, timestamp="ts").key_by("k").window(W)
                                 .aggregate(n=agg.count(), s=agg.sum("v")), parallelism=(1, 2, 4))["rows"]
    """,
    "empty_strings": """
        t = pa.table({"ts": pa.array(range(8), pa.int64()), "s": ["", "a", "", "", None, "a", "", "b"]})
        a = same_as_reference(lambda env: env.from_arrow(t, timestamp="ts").filter(col("s") == ""))
        b = same_as_reference(lambda env: env.from_arrow(t, timestamp="ts").key_by("s").window(W)
                              .aggregate(n=agg.count()))
        return a["rows"], b["table"]
    """,
    "extreme_ints": """
        lo, hi = -(1 << 63), (1 << 63) - 1
        t = pa.table({"ts": pa.array(range(8), pa.int64()), "k": pa.array([lo, hi, 0, lo, hi, -1, lo, hi]),
                      "v": pa.array([hi, lo, hi, 1, -1, lo, 0, hi])})
        return same_as_reference(lambda env: env.from_arrow(t, timestamp="ts").key_by("k").window(W)
                                 .aggregate(lo=agg.min("v"), hi=agg.max("v"), n=agg.count("v")))["table"]
    """,
    "extreme_int_sum_overflow": """
        t = pa.table({"ts": pa.array(range(3), pa.int64()), "k": [1, 1, 1],
                      "v": pa.array([(1 << 63) - 1, 1, 5])})
        env = gz.StreamEnvironment(parallelism=2)
        env.from_arrow(t.to_batches(max_chunksize=1), timestamp="ts").key_by("k").window(W) \\
            .aggregate(s=agg.sum("v")).collect("out")
        env.execute()
    """,
}


@pytest.fixture(scope="module")
def arrow_results(tmp_path_factory):
    return run_group(ARROW_CASES, tmp_path_factory.mktemp("arrow"))


def test_schema_mismatch_names_source_and_batch(arrow_results):
    error(arrow_results["schema_mismatch"], "BadInputError", "arrow#", "batch 1 has columns", "'key'")


def test_wrong_column_type_names_the_column(arrow_results):
    error(arrow_results["wrong_column_type"], "BadInputError", "batch 1", "column 'k' has type string, expected int64")


def test_query_over_a_missing_or_mistyped_column_is_rejected_at_definition(arrow_results):
    assert "nope" in error(arrow_results["query_missing_column"], "SchemaError")
    r = arrow_results["query_wrong_type"]
    assert r.get("error") in ("SchemaError", "TypeError"), r
    assert "'s'" in r["message"] or "string" in r["message"], r


def test_float_timestamps_are_rejected_at_definition(arrow_results):
    error(arrow_results["float_timestamps"], "SchemaError", "timestamp column 'ts' has type double")


def test_null_timestamps_name_source_column_and_row(arrow_results):
    error(arrow_results["null_timestamps"], "BadInputError", "column 'ts'", "null event timestamp", "batch 0, row 2")


def test_dictionary_indices_outside_the_dictionary_are_an_error(arrow_results):
    error(arrow_results["dictionary_index_out_of_range"], "BadInputError", "column 'k'", "dictionary index 99",
          "batch 1, row 2")


def test_null_keys_are_one_group(arrow_results):
    by_k, by_s, _ = ok(arrow_results["null_keys"])
    assert {r["k"]: r["n"] for r in by_k["table"] if r["window_start"] == 0} == {1: 3, 2: 1, 3: 2, None: 4}
    assert any(r["s"] is None for r in by_s["table"])


def test_null_values_are_skipped_by_aggregates(arrow_results):
    assert ok(arrow_results["null_values"])["rows"] == 5  # 3 keys in [0, 10), 2 in [10, 20)


def test_nan_and_infinities_in_values(arrow_results):
    filtered, raw = ok(arrow_results["nan_inf_values"])
    assert filtered["rows"] == 3 and raw["rows"] == 4


def test_nan_and_infinities_in_keys(arrow_results):
    table = ok(arrow_results["nan_inf_keys"])["table"]
    first_window = {r["f"]: r["n"] for r in table if r["window_start"] == 0}
    # every NaN is one group, -0.0 and 0.0 are one group, null is its own group
    assert first_window == {"NaN": 3, 1.0: 1, 0.0: 2, "inf": 2, "-inf": 1, None: 1}


def test_far_past_and_future_timestamps(arrow_results):
    assert ok(arrow_results["far_timestamps"]) == [6, 6]


def test_timestamps_at_the_int64_limits_are_an_error(arrow_results):
    error(arrow_results["int64_limit_timestamps"], "BadInputError", "'ts'", "batch 0, row 1")


def test_records_beyond_the_out_of_orderness_bound_are_late_and_counted(arrow_results):
    r = ok(arrow_results["late_records"])
    assert r["late"] == 3


def test_empty_input(arrow_results):
    assert ok(arrow_results["empty_input"]) == [0, 0, 0]


def test_zero_and_one_row_batches(arrow_results):
    assert ok(arrow_results["zero_and_one_row_batches"]) > 0


def test_empty_strings_are_values_not_nulls(arrow_results):
    n, table = ok(arrow_results["empty_strings"])
    assert n == 4
    assert {r["s"]: r["n"] for r in table} == {"": 4, "a": 2, "b": 1, None: 1}


def test_extreme_int_keys_and_values(arrow_results):
    assert len(ok(arrow_results["extreme_ints"])) == 4


def test_int64_sum_overflow_is_an_error(arrow_results):
    error(arrow_results["extreme_int_sum_overflow"], "AggregateOverflowError", "'s'")


# ==============================================================================================
# Group 2: files (CSV, Parquet) and on_bad_rows
# ==============================================================================================
FILE_CASES = {
    "csv_wrong_field_count": """
        open(TMP + "/fields.csv", "w").write("ts,k,v\\n1,1,2\\n2,1\\n3,1,2,9\\n4,2,5\\n")
        gz.StreamEnvironment().from_csv(TMP + "/fields.csv", schema={"ts": "int64", "k": "int64", "v": "int64"},
                                        timestamp="ts").execute_and_collect()
    """,
    "csv_unparsable_number": """
        open(TMP + "/num.csv", "w").write("ts,k,v\\n1,1,2\\n2,1,2.5x\\n3,1,4\\n")
        gz.StreamEnvironment().from_csv(TMP + "/num.csv", schema={"ts": "int64", "k": "int64", "v": "double"},
                                        timestamp="ts").execute_and_collect()
    """,
    "csv_unparsable_timestamp": """
        open(TMP + "/ts.csv", "w").write("ts,k\\n1,1\\n2,1\\n1.5,1\\n")
        gz.StreamEnvironment().from_csv(TMP + "/ts.csv", schema={"ts": "int64", "k": "int64"},
                                        timestamp="ts").execute_and_collect()
    """,
    "csv_invalid_utf8": """
        open(TMP + "/utf8.csv", "wb").write(b"ts,s\\n1,ok\\n2,caf\\xe9\\n3,\\xff\\xfe\\n")
        gz.StreamEnvironment().from_csv(TMP + "/utf8.csv", schema={"ts": "int64", "s": "string"},
                                        timestamp="ts").execute_and_collect()
    """,
    "csv_drop_counts_every_bad_row": """
        open(TMP + "/bad.csv", "wb").write(b"ts,k,s\\n1,1,a\\n2,1\\n3,x,b\\n4,2,\\xff\\n,2,c\\n5,2,\\n6,1,d,e\\n7,,f\\n")
        env = gz.StreamEnvironment()
        src = env.from_csv(TMP + "/bad.csv", schema={"ts": "int64", "k": "int64", "s": "string"},
                           timestamp="ts", on_bad_rows="drop")
        src.key_by("k").window(W).aggregate(n=agg.count()).collect("out")
        result = env.execute()
        return {"rows": result["out"].to_pylist(), "rejected": result.metrics["rejected_records"],
                "by_source": result.metrics["rejected_by_source"], "examples": src.node.source.rejected_examples}
    """,
    "csv_drop_small_blocks": """
        lines = ["ts,k"] + [f"{i},{'bad' if i % 97 == 0 else i % 7}" for i in range(1, 5001)]
        open(TMP + "/blocks.csv", "w").write("\\n".join(lines) + "\\n")
        env = gz.StreamEnvironment(parallelism=2)
        src = env.from_csv(TMP + "/blocks.csv", schema={"ts": "int64", "k": "int64"}, timestamp="ts",
                           on_bad_rows="drop")
        src.node.source.block_size = 4096  # many batches
        src.key_by("k").window(W).aggregate(n=agg.count()).collect("out")
        result = env.execute()
        return sum(result["out"]["n"].to_pylist()), result.metrics["rejected_records"]
    """,
    "csv_drop_inferred_schema_drift": """
        # the schema is inferred from the first block; a later block has text in the int column
        lines = ["ts,k"] + [f"{i},{i % 5}" for i in range(1, 200000)] + ["200000,oops"]  # > 1 MiB
        open(TMP + "/drift.csv", "w").write("\\n".join(lines) + "\\n")
        out = []
        for mode in ("error", "drop"):
            try:
                src = gz.StreamEnvironment().from_csv(TMP + "/drift.csv", timestamp="ts", on_bad_rows=mode)
                out.append(src.execute_and_collect().num_rows)
            except gz.BadInputError as e:
                out.append(str(e))
        return out
    """,
    "csv_drop_reads_clean_files_like_error": """
        text = ("ts,i,f,b,s,t\\n"
                "1,5,1.5,true,x,2020-01-01 00:00:00\\n"
                "2,,NA,false,,2020-01-01T00:00:01\\n"
                "3,-7,nan,1,\\"a,b\\",\\n"
                "4,NULL,1e3,0,NA,2021-06-30 12:00:00.250\\n"
                "5,9,-inf,TRUE,null,1999-12-31\\n")
        open(TMP + "/clean.csv", "w").write(text)
        schema = {"ts": "int64", "i": "int64", "f": "double", "b": "bool", "s": "string",
                  "t": pa.timestamp("ms")}
        out = {}
        for mode in ("error", "drop"):
            for declared in (schema, None):
                t = gz.StreamEnvironment().from_csv(TMP + "/clean.csv", schema=declared, timestamp="ts",
                                                    on_bad_rows=mode).execute_and_collect()
                out[mode, declared is None] = t
        for inferred in (False, True):
            assert out["error", inferred].equals(out["drop", inferred]), (out["error", inferred], out["drop", inferred])
        return out["error", False].num_rows, str(out["error", True].schema)
    """,
    "csv_missing_column": """
        open(TMP + "/cols.csv", "w").write("ts,k\\n1,1\\n")
        gz.StreamEnvironment().from_csv(TMP + "/cols.csv", schema={"ts": "int64", "v": "int64"},
                                        timestamp="ts").execute_and_collect()
    """,
    "csv_empty_file": """
        open(TMP + "/empty.csv", "w").write("")
        gz.StreamEnvironment().from_csv(TMP + "/empty.csv", timestamp="ts")
    """,
    "csv_header_only": """
        open(TMP + "/header.csv", "w").write("ts,k\\n")
        out = []
        for mode in ("error", "drop"):
            out.append(gz.StreamEnvironment().from_csv(TMP + "/header.csv", schema={"ts": "int64", "k": "int64"},
                                                       timestamp="ts", on_bad_rows=mode)
                       .key_by("k").window(W).aggregate(n=agg.count()).execute_and_collect().num_rows)
        return out
    """,
    "csv_empty_and_huge_strings": """
        big = "x" * (20 << 20)
        open(TMP + "/strings.csv", "w").write(f"ts,s\\n1,\\n2,{big}\\n3,a\\n")
        out = []
        for mode in ("error", "drop"):
            for block_size in (1 << 22, 64 << 20):  # the default: a row longer than a block is an error
                try:
                    t = gz.StreamEnvironment().from_csv(TMP + "/strings.csv", schema={"ts": "int64", "s": "string"},
                                                        timestamp="ts", on_bad_rows=mode, block_size=block_size) \\
                        .filter(col("s") != "a").execute_and_collect()
                    out.append([len(v) for v in t["s"].to_pylist()])
                except gz.BadInputError as e:
                    out.append(str(e))
        return out
    """,
    "csv_header_without_line_breaks": """
        import tracemalloc
        with open(TMP + "/one_line.csv", "w") as f:  # 6 MB, no line break
            for _ in range(600):
                f.write(("x" * 99 + ",") * 100)
        out = []
        for schema, sizes in (({"ts": "int64"}, {"block_size": 1 << 20}), ({"ts": "int64"}, {}), (None, {})):
            tracemalloc.start()
            try:
                gz.StreamEnvironment().from_csv(TMP + "/one_line.csv", schema=schema, timestamp="ts", **sizes)
                message = None
            except BaseException as e:
                message = f"{type(e).__name__}: {str(e)[:500]}"
            out.append((message, tracemalloc.get_traced_memory()[1]))
            tracemalloc.stop()
        return out
    """,
    "csv_duplicate_header": """
        open(TMP + "/dup.csv", "w").write("ts,v,k,v\\n1,2,3,4\\n")
        out = []
        for schema in ({"ts": "int64", "v": "int64"}, {"ts": "int64", "k": "int64"}, None):
            try:
                out.append(gz.StreamEnvironment().from_csv(TMP + "/dup.csv", schema=schema, timestamp="ts")
                           .execute_and_collect().to_pylist())
            except BaseException as e:
                out.append(f"{type(e).__name__}: {e}")
        return out
    """,
    "csv_bad_on_bad_rows": """
        open(TMP + "/x.csv", "w").write("ts\\n1\\n")
        gz.StreamEnvironment().from_csv(TMP + "/x.csv", timestamp="ts", on_bad_rows="ignore")
    """,
    "parquet_truncated": """
        import pyarrow.parquet as pq
        t = pa.table({"ts": pa.array(range(1000), pa.int64()), "k": [i % 7 for i in range(1000)]})
        pq.write_table(t, TMP + "/full.parquet", row_group_size=100)
        data = open(TMP + "/full.parquet", "rb").read()
        open(TMP + "/cut.parquet", "wb").write(data[: len(data) // 2])
        gz.StreamEnvironment().from_parquet(TMP + "/cut.parquet", timestamp="ts")
    """,
    "parquet_truncated_after_definition": """
        import pyarrow.parquet as pq
        t = pa.table({"ts": pa.array(range(1000), pa.int64()), "k": [i % 7 for i in range(1000)]})
        pq.write_table(t, TMP + "/later.parquet", row_group_size=100)
        q = gz.StreamEnvironment().from_parquet(TMP + "/later.parquet", timestamp="ts").filter(col("k") > 0)
        data = open(TMP + "/later.parquet", "rb").read()
        open(TMP + "/later.parquet", "wb").write(data[: len(data) - 100])
        q.execute_and_collect()
    """,
    "parquet_corrupt_pages": """
        import pyarrow.parquet as pq
        t = pa.table({"ts": pa.array(range(1000), pa.int64()), "k": pa.array(range(1000), pa.int64())})
        pq.write_table(t, TMP + "/crc.parquet", row_group_size=500, write_page_checksum=True,
                       compression="none", use_dictionary=False)
        data = bytearray(open(TMP + "/crc.parquet", "rb").read())
        k_at = data.find((700).to_bytes(8, "little"))  # a value of k in the second row group
        data[k_at:k_at + 8] = (123456789).to_bytes(8, "little")
        open(TMP + "/crc.parquet", "wb").write(bytes(data))
        gz.StreamEnvironment().from_parquet(TMP + "/crc.parquet", timestamp="ts").execute_and_collect()
    """,
    "parquet_null_timestamps_drop": """
        import pyarrow.parquet as pq
        t = pa.table({"ts": pa.array([1, None, 3, None, 15], pa.int64()), "k": [1, 1, 1, 2, 2]})
        pq.write_table(t, TMP + "/nullts.parquet", row_group_size=2)
        out = []
        for mode in ("error", "drop"):
            env = gz.StreamEnvironment()
            env.from_parquet(TMP + "/nullts.parquet", timestamp="ts", on_bad_rows=mode) \\
                .key_by("k").window(W).aggregate(n=agg.count()).collect("out")
            try:
                result = env.execute()
                out.append([result["out"].to_pylist(), result.metrics["rejected_records"]])
            except gz.BadInputError as e:
                out.append(str(e))
        return out
    """,
}


@pytest.fixture(scope="module")
def file_results(tmp_path_factory):
    return run_group(FILE_CASES, tmp_path_factory.mktemp("files"))


def test_csv_wrong_field_count_names_the_line(file_results):
    error(file_results["csv_wrong_field_count"], "BadInputError", "csv:", "fields.csv", "line 3",
          "expected 3 fields, got 2")


def test_csv_unparsable_number_names_column_and_row(file_results):
    error(file_results["csv_unparsable_number"], "BadInputError", "num.csv", "column 'v'", "batch 0, row 1",
          "'2.5x'", "double")


def test_csv_unparsable_event_time_names_column_and_row(file_results):
    error(file_results["csv_unparsable_timestamp"], "BadInputError", "column 'ts'", "row 2", "'1.5'")


def test_csv_invalid_utf8_names_column_and_row(file_results):
    error(file_results["csv_invalid_utf8"], "BadInputError", "utf8.csv", "column 's'", "row 1", "not valid UTF-8")


def test_csv_on_bad_rows_drop_counts_every_bad_row(file_results):
    r = ok(file_results["csv_drop_counts_every_bad_row"])
    # kept: (1,1,a), (5,2,""), (7,null,f); dropped: a short line, "x" in k, \xff in s, a null
    # event time, a long line
    assert r["rejected"] == 5
    assert list(r["by_source"].values()) == [5]
    assert sorted((row["k"] is None, row["k"], row["n"]) for row in r["rows"]) == [(False, 1, 1), (False, 2, 1),
                                                                                     (True, None, 1)]
    assert len(r["examples"]) == 5 and any("line 3" in e for e in r["examples"])


def test_csv_on_bad_rows_drop_over_many_blocks(file_results):
    kept, rejected = ok(file_results["csv_drop_small_blocks"])
    assert rejected == 5000 // 97 and kept + rejected == 5000


def test_csv_inferred_schema_drift_later_in_the_file(file_results):
    err, kept = ok(file_results["csv_drop_inferred_schema_drift"])
    assert "column 'k'" in err and "'oops'" in err and "data row 199999" in err
    assert kept == 199999


def test_csv_drop_mode_reads_clean_files_exactly_like_the_fast_path(file_results):
    assert ok(file_results["csv_drop_reads_clean_files_like_error"])[0] == 5


def test_csv_declared_column_missing_from_the_file(file_results):
    error(file_results["csv_missing_column"], "SchemaError", "cols.csv", "['v']", "header has: ts, k")


def test_csv_empty_file_and_header_only(file_results):
    error(file_results["csv_empty_file"], "BadInputError", "empty.csv", "Empty CSV file")
    assert ok(file_results["csv_header_only"]) == [0, 0]


def test_csv_empty_and_huge_strings(file_results):
    small_error, big, small_drop, big_drop = ok(file_results["csv_empty_and_huge_strings"])
    assert big == big_drop == [0, 20 << 20]
    for e in (small_error, small_drop):
        assert "strings.csv" in e and "longer than the CSV block size" in e and "block_size=" in e


def test_csv_header_without_line_breaks_is_read_within_one_block(file_results):
    """A file without line breaks: a clear error naming the file, after reading one block of it
    at most (Python's allocations, traced, stay near the block size; the file is 6 MB)."""
    for (message, peak), block in zip(ok(file_results["csv_header_without_line_breaks"]), (1 << 20, 1 << 22, 1 << 22)):
        assert message is not None and message.startswith("BadInputError: csv:"), message
        assert "one_line.csv" in message and f"does not end within the first {block} bytes" in message, message
        assert "block_size=" in message
        assert peak < block + (1 << 20), (message, peak)


def test_csv_header_naming_a_column_twice_is_rejected(file_results):
    """Whether or not the schema is declared, and even when the twice-named column is not read."""
    for r in ok(file_results["csv_duplicate_header"]):
        assert r.startswith("SchemaError: csv:") and "dup.csv" in r, r
        assert "column 'v' more than once (columns 2, 4)" in r, r


def test_on_bad_rows_takes_error_or_drop(file_results):
    error(file_results["csv_bad_on_bad_rows"], "ValueError", "on_bad_rows", "'ignore'")


def test_truncated_parquet_file(file_results):
    error(file_results["parquet_truncated"], "BadInputError", "parquet:", "cut.parquet", "truncated or corrupt")
    error(file_results["parquet_truncated_after_definition"], "BadInputError", "later.parquet")


def test_corrupt_parquet_pages_are_caught_by_checksums(file_results):
    error(file_results["parquet_corrupt_pages"], "BadInputError", "crc.parquet", "row group 1")


def test_parquet_null_event_times_error_or_drop(file_results):
    err, (rows, rejected) = ok(file_results["parquet_null_timestamps_drop"])
    assert "column 'ts'" in err and "batch 0, row 1" in err
    assert rejected == 2
    assert sorted((r["k"], r["window_start"], r["n"]) for r in rows) == [(1, 0, 2), (2, 10, 1)]


# ==============================================================================================
# Group 3: big inputs (a 50 MB string, many distinct keys)
# ==============================================================================================
HUGE_STRING_CASES = {
    "huge_string_value": """
        big = "y" * (50 << 20)
        t = pa.table({"ts": pa.array([1, 2, 3, 12], pa.int64()), "s": ["a", big, "", big],
                      "v": [1, 2, 3, 4]})
        env = gz.StreamEnvironment()
        src = env.from_arrow(t.to_batches(max_chunksize=2), timestamp="ts")
        src.filter(col("s") != "a").select("v").collect("filtered")
        src.key_by("s").window(W).aggregate(n=agg.count(), s2=agg.sum("v")).collect("grouped")
        result = env.execute()
        grouped = [[len(r["s"]), r["window_start"], r["n"], r["s2"]] for r in result["grouped"].to_pylist()]
        return result["filtered"]["v"].to_pylist(), sorted(grouped)
    """,
}


def distinct_keys_case(n: int) -> dict[str, str]:
    return {f"distinct_keys_{n}": f"""
        n = {n}
        keys = pa.array(np.random.default_rng(7).permutation(n).astype(np.int64))
        t = pa.table({{"ts": pa.array(np.arange(n, dtype=np.int64) * 20 // n, pa.int64()), "k": keys}})
        env = gz.StreamEnvironment(parallelism=2)
        env.from_arrow(t.to_batches(max_chunksize=1 << 20), timestamp="ts").key_by("k").window(W) \\
            .aggregate(c=agg.count()).collect("out")
        out = env.execute()["out"]
        return {{"rows": out.num_rows, "sum": pc.sum(out["c"]).as_py(), "max": pc.max(out["c"]).as_py(),
                 "distinct": pc.count_distinct(out["k"]).as_py(),
                 "windows": pc.unique(out["window_start"]).to_pylist()}}
    """}


@pytest.mark.slow
def test_huge_string_value(tmp_path):
    r = run_group(HUGE_STRING_CASES, tmp_path)
    filtered, grouped = ok(r["huge_string_value"])
    assert filtered == [2, 3, 4]
    assert grouped == [[0, 0, 1, 3], [1, 0, 1, 1], [50 << 20, 0, 1, 2], [50 << 20, 10, 1, 4]]


@pytest.mark.parametrize("n", [
    slow(1_000_000),
    pytest.param(10_000_000, marks=pytest.mark.skipif(os.environ.get("GRIZZLY_HOSTILE_LARGE") != "1",
                                                      reason="set GRIZZLY_HOSTILE_LARGE=1 (~20 s, ~1.6 GB)")),
])
def test_many_distinct_keys(tmp_path, n):
    r = ok(run_group(distinct_keys_case(n), tmp_path, timeout=600)[f"distinct_keys_{n}"])
    assert r["rows"] == n and r["sum"] == n and r["max"] == 1 and r["distinct"] == n
    assert r["windows"] == [0, 10]


# ==============================================================================================
# Fuzzing: random hostile batches through random queries at parallelism 1..4
# ==============================================================================================
FUZZ_CASE = {
    "fuzz": """
        from hypothesis import given, settings, HealthCheck, strategies as st
        from strategies import query_cases, QueryCase
        from grizzly_py.lambdas import LambdaTranslationError
        CLEAN = (gz.BadInputError, SchemaError, AggregateOverflowError)
        I64 = [-(1 << 63), (1 << 63) - 1, -(1 << 62), 1 << 62]
        stats = {"equal": 0, "clean_error": 0}

        @st.composite
        def hostile(draw):
            case = draw(query_cases(max_rows=20))
            batches = case.batches()
            for _ in range(draw(st.integers(0, 3))):
                if not batches:
                    break
                i = draw(st.integers(0, len(batches) - 1))
                b, what = batches[i], draw(st.sampled_from(["nulls", "extreme", "ts", "drift", "nan"]))
                names = [f.name for f in b.schema]
                c = draw(st.sampled_from(names))
                arr = b.column(c)
                if what == "nulls" and len(b) and c != "ts":
                    mask = pa.array(draw(st.lists(st.booleans(), min_size=len(b), max_size=len(b))))
                    arr = pc.if_else(mask, pa.scalar(None, arr.type), arr)
                elif what == "extreme" and len(b) and pa.types.is_integer(arr.type) and c != "ts":
                    vals = [draw(st.sampled_from(I64)) for _ in range(len(b))]
                    arr = pa.array(vals, pa.int64()).cast(arr.type, safe=False)
                elif what == "nan" and len(b) and pa.types.is_floating(arr.type):
                    arr = pa.array([draw(st.sampled_from([float("nan"), float("inf"), -float("inf"), None]))
                                    for _ in range(len(b))], arr.type)
                elif what == "ts" and len(b) and "ts" in b.schema.names \\
                        and not pa.types.is_string(b.schema.field("ts").type):  # (not drifted before)
                    t = b.column("ts")
                    vals = t.cast(pa.int64()).to_pylist()
                    vals[draw(st.integers(0, len(b) - 1))] = draw(st.sampled_from(I64 + [None]))
                    arr, c = pa.array(vals, pa.int64()).cast(t.type, safe=False), "ts"
                elif what == "drift":
                    kind = draw(st.sampled_from(["type", "rename", "drop"]))
                    if kind == "type":
                        arr = arr.cast(pa.string()) if not pa.types.is_string(arr.type) else \\
                            pa.array([None] * len(b), pa.int64())
                    elif kind == "rename":
                        b = b.rename_columns([n + "_x" if n == c else n for n in names])
                    elif kind == "drop" and len(names) > 1:
                        b = b.drop_columns([c])
                if arr is not b.column(c) if c in b.schema.names else False:
                    b = b.set_column(b.schema.get_field_index(c), c, arr)
                batches[i] = b
            return case, batches, draw(st.integers(1, 4))

        def build(case, batches):
            def f(env):
                s = env.from_arrow(list(batches), timestamp="ts", watermark=BOUNDED(case.bound_ms)) \\
                    if batches else case.source(env)
                for step in case.steps:
                    s = step.apply(s)
                return s
            return f

        @settings(max_examples=int(os.environ.get("GRIZZLY_HOSTILE_FUZZ", "6")), deadline=None, database=None,
                  suppress_health_check=list(HealthCheck), print_blob=True)
        @given(hostile())
        def fuzz(drawn):
            case, batches, p = drawn
            if batches and batches[0].schema != case.arrow_schema:
                return  # the first batch defines the schema: covered by the drift of later batches
            f = build(case, batches)
            try:
                expected, ref_metrics = reference.run(f(gz.StreamEnvironment()).node)
            except Exception:
                expected = None
            env = gz.StreamEnvironment(parallelism=p)
            try:
                f(env).collect("out")
                result = env.execute()
            except CLEAN as e:
                stats["clean_error"] += 1
                return
            if expected is not None:
                assert_tables_equal(plain(result["out"]), plain(expected))
                stats["equal"] += 1
        fuzz()
        return stats
    """,
}


def test_fuzz_random_hostile_batches(tmp_path):
    r = run_group(FUZZ_CASE, tmp_path, timeout=3600)["fuzz"]
    stats = ok(r)
    assert stats["equal"] + stats["clean_error"] > 0
