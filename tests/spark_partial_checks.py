"""What the Spark tests of the partial strategy share (unions as partial states,
test_spark_unions.py; ranked windows, test_spark_ranked.py): a query run to the end of its
input on an environment, and the check that a Spark job gave the embedded engine's rows and
counters from more than one partial task."""

from __future__ import annotations

import pytest
from strategies import assert_tables_equal

COUNTERS = ("records_in", "records_out", "late_records", "filtered_records")


def local_spark(app: str):
    """A module's fixture ``spark``: one local[2] session for the module's tests."""
    @pytest.fixture(scope="module")
    def spark():
        from grizzly_py.spark import local_session
        session = local_session(2, master="local[2]", app=app)
        yield session
        session.stop()
    return spark


def run_collected(env, query):
    """``query`` (a stream of ``env``) collected: (its table, the job's metrics)."""
    query.collect("out")
    result = env.execute()
    return result["out"], result.metrics


def assert_the_engines_from_partial_tasks(actual, spark_metrics, expected, metrics) -> None:
    """The Spark job's rows (in order) and counters are the engine's, from two partial tasks or more."""
    assert_tables_equal(actual, expected.cast(actual.schema) if expected.schema != actual.schema else expected)
    q = spark_metrics["queries"][0]
    assert q["strategy"] == "partial", q["notes"]
    assert len([t for t in q["task_reports"] if t["stage"] == "partial"]) >= 2
    for name in COUNTERS:
        assert spark_metrics[name] == metrics[name], name
