"""Kafka topics as grizzly-py sources, through Spark's Kafka source (Structured Streaming).

Spark reads a topic as rows of ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``,
``timestamp`` and ``timestampType``; ``parse_kafka`` turns each record's value (JSON or CSV text)
into the columns of a schema, keeping the Kafka timestamp, partition and offset beside them, and
``StreamEnvironment.from_kafka`` (``read_kafka``) subscribes to a topic and hands the parsed
stream to ``from_spark``: from there it is any streaming DataFrame (``docs/spark.md``).

Spark's Kafka source lives in a separate package (``spark-sql-kafka-0-10``) that Spark loads
from its own repositories at session start (``spark.jars.packages``); without it ``read_kafka``
fails with an error that says so. This workplace reaches no Kafka broker and no Maven repository:
the parsing is tested on rows of Kafka's shape, batch and streaming; the subscription is not.
"""

from __future__ import annotations

import pyarrow as pa

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
KEPT = {"timestamp": "kafka_timestamp", "partition": "kafka_partition", "offset": "kafka_offset"}
FORMATS = ("json", "csv")


def _struct(schema):
    """A Spark ``StructType`` from a pyarrow schema, a StructType or a DDL string."""
    if isinstance(schema, pa.Schema):
        from .schema import spark_struct
        return spark_struct(schema)
    return schema


def parse_kafka(df, schema, value_format: str = "json", options: dict | None = None):
    """The records of a Kafka DataFrame (batch or streaming, Spark's Kafka source schema) as the
    columns of ``schema`` parsed from each value (``value_format`` "json" or "csv"; ``options``:
    Spark's ``from_json``/``from_csv`` options), followed by ``kafka_timestamp``,
    ``kafka_partition`` and ``kafka_offset``. A value that does not parse gives nulls (Spark's
    PERMISSIVE mode): the query's own rules for null columns apply."""
    from pyspark.sql import functions as F
    if value_format not in FORMATS:
        raise ValueError(f"value_format must be one of {FORMATS}, got {value_format!r}")
    missing = [c for c in ("value", *KEPT) if c not in df.columns]
    if missing:
        raise ValueError(f"not a Kafka DataFrame: no column(s) {missing} (Spark's Kafka source gives {KAFKA_COLUMNS})")
    struct = _struct(schema)
    text = F.col("value").cast("string")
    parse = F.from_json if value_format == "json" else F.from_csv
    if value_format == "csv" and not isinstance(struct, str):
        struct = struct.simpleString()[len("struct<"):-1].replace(":", " ")
    parsed = parse(text, struct, options or {}).alias("__gz_value")
    kept = [F.col(name).alias(alias) for name, alias in KEPT.items()]
    return df.select(parsed, *kept).select("__gz_value.*", *KEPT.values())


def read_kafka(spark, bootstrap_servers: str, topic: str, schema, value_format: str = "json",
               starting_offsets: str = "earliest", options: dict | None = None):
    """A streaming DataFrame of ``topic`` parsed by ``parse_kafka``; ``options`` go to Spark's
    Kafka source (``kafka.*`` settings, ``maxOffsetsPerTrigger``, ...)."""
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers) \
        .option("subscribe", topic).option("startingOffsets", starting_offsets)
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    try:
        df = reader.load()
    except Exception as e:  # Spark's AnalysisException when the Kafka package is not loaded
        if "kafka" in str(e).lower() and ("find data source" in str(e).lower() or "DATA_SOURCE_NOT_FOUND" in str(e)):
            raise RuntimeError(
                "Spark's Kafka source is not loaded: start the session with spark.jars.packages="
                f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark.version} (Spark fetches it from Maven)") from e
        raise
    return parse_kafka(df, schema, value_format)
