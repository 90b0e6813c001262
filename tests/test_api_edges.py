"""What a new user meets at the API's edges: durations with their units, aggregates by name, a
second execute(), PyFlink's names (Time.days, print(), execute("name"), from_collection), pandas
and other Arrow exporters as sources, late records that warn, metrics on collected tables,
messages for expressions used as Python values, and a header-only CSV."""

import datetime
import math
import warnings

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, col
from grizzly_py.time import to_millis
from grizzly_py.windows import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)

TABLE = pa.table({"ts": pa.array([1, 4, 12, 15, 33], pa.int64()), "k": ["a", "b", "a", "a", "b"],
                  "v": [1.0, 2.0, 3.0, 4.0, 5.0]})


def stream(env=None, data=TABLE, **kwargs):
    return (env or gz.StreamEnvironment()).from_arrow(data, timestamp="ts", **kwargs)


def _interval_join(d):
    s = stream()
    return s.interval_join(s).where("k").equal_to("k").between(d, d)


# every API argument that is a duration, as a function of that duration
DURATION_ARGUMENTS = {
    "TumblingEventTimeWindows.of": TumblingEventTimeWindows.of,
    "SlidingEventTimeWindows.of (size)": lambda d: SlidingEventTimeWindows.of(d, Time.milliseconds(1)),
    "SlidingEventTimeWindows.of (slide)": lambda d: SlidingEventTimeWindows.of(Time.days(1), d),
    "EventTimeSessionWindows.with_gap": EventTimeSessionWindows.with_gap,
    "TumblingProcessingTimeWindows.of": TumblingProcessingTimeWindows.of,
    "SlidingProcessingTimeWindows.of": lambda d: SlidingProcessingTimeWindows.of(d, d),
    "for_bounded_out_of_orderness": WatermarkStrategy.for_bounded_out_of_orderness,
    "interval_join(...).between": _interval_join,
    "enable_checkpointing(interval=...)": lambda d: gz.StreamEnvironment().enable_checkpointing("chk", d),
}


@pytest.mark.parametrize("what", DURATION_ARGUMENTS)
@pytest.mark.parametrize("bare", [10, 10.0, 2500])
def test_a_bare_number_is_no_duration_and_the_error_says_how_to_write_one(what, bare):
    with pytest.raises(TypeError, match=rf"bare number has no unit; write Time\.seconds\({bare}\)"):
        DURATION_ARGUMENTS[what](bare)


@pytest.mark.parametrize("what", DURATION_ARGUMENTS)
def test_every_duration_argument_takes_time_timedelta_and_spark_strings(what):
    build = DURATION_ARGUMENTS[what]
    for same in (Time.seconds(10), datetime.timedelta(seconds=10), "10 seconds", "10000 milliseconds"):
        build(same)  # accepted


UNITS = {"millisecond": Time.milliseconds, "second": Time.seconds, "minute": Time.minutes, "hour": Time.hours,
         "day": Time.days}


@given(n=st.integers(0, 10**6), unit=st.sampled_from(sorted(UNITS)), plural=st.booleans(),
       upper=st.booleans(), pad=st.sampled_from(["", " ", "  "]))
def test_spark_style_strings_mean_what_time_says(n, unit, plural, upper, pad):
    text = f"{pad}{n} {unit}{'s' if plural else ''}{pad}"
    assert to_millis(text.upper() if upper else text, what="t") == UNITS[unit](n).ms
    assert TumblingEventTimeWindows.of(f"{n + 1} {unit}s") == TumblingEventTimeWindows.of(UNITS[unit](n + 1))


@pytest.mark.parametrize("text", ["10", "10 sec", "1s", "ten seconds", "10 weeks", "", "10 seconds ago",
                                  "1.0001 seconds"])
def test_other_strings_are_refused_with_the_accepted_forms(text):
    with pytest.raises(TypeError, match=r'"10 seconds", "1 minute", "500 milliseconds", "2 hours", "1 day"'
                                        r'|not a whole number of milliseconds'):
        TumblingEventTimeWindows.of(text)


def test_time_days_and_fractions():
    assert Time.days(1) == Time.hours(24) == Time.minutes(1440)
    assert to_millis("1.5 seconds", what="t") == 1500
    assert to_millis("-5 seconds", what="t") == -5000  # interval-join bounds may be negative


def test_unnamed_aggregates_are_refused_with_names_to_give_them():
    keyed = stream().key_by("k").window(TumblingEventTimeWindows.of(Time.seconds(10)))
    with pytest.raises(TypeError, match=r"by name.*\.aggregate\(n=agg\.count\(\), sum_v=agg\.sum\(col\('v'\)\)\)"):
        keyed.aggregate(agg.count(), agg.sum("v"))


def test_a_second_execute_says_the_sinks_were_used_up_and_new_sinks_run():
    env = gz.StreamEnvironment()
    with pytest.raises(ValueError, match="register a sink"):
        env.execute()
    stream(env).collect("out")
    assert env.execute()["out"].num_rows == 5
    with pytest.raises(ValueError, match="used up\\) by the previous execute\\(\\)"):
        env.execute()
    stream(env).filter(col("v") > 2).collect("out")
    assert env.execute()["out"].num_rows == 3


def test_execute_takes_a_job_name():
    env = gz.StreamEnvironment()
    stream(env).collect("out")
    assert env.execute("nightly counts").metrics["job_name"] == "nightly counts"


def test_print_writes_each_record_after_the_job(capsys):
    env = gz.StreamEnvironment()
    counts = stream(env).key_by("k").window(TumblingEventTimeWindows.of("10 milliseconds")).aggregate(n=agg.count())
    counts.print()
    stream(env).filter(col("v") > 4).select("k", "v").print()
    stream(env).collect("kept")
    result = env.execute()
    assert list(result.tables) == ["kept"]  # the printed rows are not collected
    expected = counts.execute_and_collect().to_pylist() + [{"k": "b", "v": 5.0}]
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["Row(" + ", ".join(f"{k}={v!r}" for k, v in row.items()) + ")" for row in expected]


@pytest.mark.parametrize("rows, schema", [
    ([(1, "a", 1.0), (4, "b", 2.0), (12, "a", 3.0), (15, "a", 4.0), (33, "b", 5.0)],
     {"ts": "int64", "k": "string", "v": "float64"}),
    ([(1, "a", 1.0), (4, "b", 2.0), (12, "a", 3.0), (15, "a", 4.0), (33, "b", 5.0)], ["ts", "k", "v"]),
    (TABLE.to_pylist(), None),
    (TABLE.to_pylist(), TABLE.schema),
])
def test_from_collection_gives_what_from_arrow_gives(rows, schema):
    def query(s):
        return s.key_by("k").window(TumblingEventTimeWindows.of("10 milliseconds")).aggregate(s=agg.sum("v"))
    env = gz.StreamEnvironment()
    got = query(env.from_collection(rows, schema, timestamp="ts")).execute_and_collect()
    assert got.to_pylist() == query(stream()).execute_and_collect().to_pylist()


def test_from_collection_errors_name_the_row_or_column():
    env = gz.StreamEnvironment()
    with pytest.raises(gz.SchemaError, match="tuples need schema="):
        env.from_collection([(1, "a")])
    with pytest.raises(gz.SchemaError, match=r"row 1 is \(2,\); expected a tuple of 2 values \(ts, k\)"):
        env.from_collection([(1, "a"), (2,)], {"ts": "int64", "k": "string"})
    with pytest.raises(gz.SchemaError, match="column 'ts'"):
        env.from_collection([("x", "a")], {"ts": "int64", "k": "string"})
    with pytest.raises(gz.SchemaError, match="'int46' is not an Arrow type"):
        env.from_collection([(1,)], {"ts": "int46"})
    with pytest.raises(gz.SchemaError, match=r"row 0 has column\(s\) \['x'\]"):
        env.from_collection([{"ts": 1, "x": 2}], {"ts": "int64"})
    with pytest.raises(gz.SchemaError, match="empty collection"):
        env.from_collection([])
    assert env.from_collection([], {"ts": "int64"}, timestamp="ts").execute_and_collect().num_rows == 0


def test_from_arrow_takes_a_pandas_dataframe_without_its_index():
    pd = pytest.importorskip("pandas")
    frame = TABLE.to_pandas()
    frame.index = [10, 11, 12, 13, 14]
    s = gz.StreamEnvironment().from_arrow(frame, timestamp="ts")
    assert s.schema.names == ["ts", "k", "v"]
    assert s.execute_and_collect().to_pylist() == TABLE.to_pylist()
    assert isinstance(frame, pd.DataFrame)


class ArrowExporter:
    """Exports its data through the Arrow C stream interface only (as polars and DuckDB do)."""

    def __init__(self, table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


def test_from_arrow_takes_any_arrow_stream_exporter_and_reruns_it():
    s = gz.StreamEnvironment().from_arrow(ArrowExporter(TABLE), timestamp="ts").filter(col("v") > 1)
    assert s.execute_and_collect().to_pylist() == s.execute_and_collect().to_pylist() == TABLE.to_pylist()[1:]


def test_from_arrow_takes_a_polars_dataframe():
    pl = pytest.importorskip("polars")
    s = gz.StreamEnvironment().from_arrow(pl.from_arrow(TABLE), timestamp="ts")
    assert s.execute_and_collect().to_pylist() == TABLE.to_pylist()


def test_from_arrow_names_what_it_takes_when_given_something_else():
    with pytest.raises(TypeError, match="a pandas or polars DataFrame"):
        gz.StreamEnvironment().from_arrow({"ts": [1]}, timestamp="ts")


def _late_job(env):
    batches = pa.table({"ts": pa.array([5, 25, 3, 4, 30, 1], pa.int64()),
                        "k": ["a", "b", "a", "b", "a", "b"]}).to_batches(max_chunksize=2)
    return (env.from_arrow(batches, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(
        Time.milliseconds(2))).key_by("k").window(TumblingEventTimeWindows.of("10 milliseconds")).aggregate(
        n=agg.count()))


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_job_that_drops_late_records_warns_once_with_the_count_and_bound(parallelism):
    env = gz.StreamEnvironment(parallelism=parallelism)
    _late_job(env).collect("out")
    with pytest.warns(gz.LateRecordsWarning) as caught:
        result = env.execute()
    late = result.metrics["late_records"]
    assert late == 3 and len(caught) == 1
    assert f"{late:,} late record(s) dropped" in str(caught[0].message) and ": 2 ms" in str(caught[0].message)
    assert caught[0].filename == __file__  # it points at the user's execute()
    with pytest.warns(gz.LateRecordsWarning, match="3 late record"):
        table = _late_job(gz.StreamEnvironment(parallelism=parallelism)).execute_and_collect()
    assert gz.job_metrics(table)["late_records"] == 3


def test_a_job_without_late_records_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", gz.LateRecordsWarning)
        stream().key_by("k").window(TumblingEventTimeWindows.of("10 milliseconds")).aggregate(
            n=agg.count()).execute_and_collect()


def test_execute_and_collect_tables_carry_the_jobs_metrics():
    table = stream().filter(col("v") > 1).execute_and_collect()
    metrics = gz.job_metrics(table)
    assert metrics["records_in"] == 5 and metrics["filtered_records"] == 1 and metrics["records_out"] == 4
    assert table.to_pylist() == TABLE.to_pylist()[1:]
    with pytest.raises(ValueError, match="carries no grizzly-py metrics"):
        gz.job_metrics(TABLE)


def test_python_functions_of_a_column_name_the_construct():
    with pytest.raises(TypeError, match=r'`math\.log\(col\("v"\)\)` needs a number.*math\.log cannot take a column'):
        math.log(col("v")) > 5
    with pytest.raises(TypeError, match=r"`any\(col\(\"v\"\) > i for i in range\(3\)\)` asks for the truth value"
                                        r".*\.isin"):
        any(col("v") > i for i in range(3))
    with pytest.raises(TypeError, match=r"`not col\(\"v\"\)` .*write ~condition"):
        not col("v")  # noqa: B015
    with pytest.raises(TypeError, match=r"`col\(\"v\"\) in \[1, 2\]` .*\.isin"):
        col("v") in [1, 2]  # noqa: B015
    with pytest.raises(TypeError, match=r"`\(col\(\"v\"\) > 1\) and \(col\(\"v\"\) < 2\)` .*& \| ~"):
        (col("v") > 1) and (col("v") < 2)  # noqa: B015


def test_lambdas_name_the_construct_they_cannot_translate():
    s = stream()
    with pytest.raises(gz.LambdaTranslationError, match=r"function call math\.log\(\)"):
        s.filter(lambda r: math.log(r.v) > 5)
    with pytest.raises(gz.LambdaTranslationError, match=r"function call any\(\)"):
        s.filter(lambda r: any(r.v > i for i in range(3)))


def test_a_header_only_csv_needs_its_schema_and_then_gives_an_empty_result(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("ts,k\n")
    env = gz.StreamEnvironment()
    with pytest.raises(gz.SchemaError, match=r"'ts', 'k': the file has a header but no data rows.*schema="):
        env.from_csv(path, timestamp="ts")
    out = env.from_csv(path, schema={"ts": "int64", "k": "string"}, timestamp="ts").key_by("k").window(
        TumblingEventTimeWindows.of("1 second")).aggregate(n=agg.count()).execute_and_collect()
    assert out.num_rows == 0 and out.schema.names == ["k", "window_start", "window_end", "n"]
