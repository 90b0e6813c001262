"""``SparkSource``: a Spark DataFrame (batch or streaming) as a grizzly-py source."""

from __future__ import annotations

from dataclasses import dataclass

from ..sources import Source, next_source_name
from ..watermark import WatermarkStrategy
from .schema import spark_schema_arrow


@dataclass(eq=False)
class SparkSource(Source):
    """A DataFrame's rows in the Arrow types Spark hands to Python (timestamps in microseconds,
    with the session's time zone). It runs only on Spark: a batch DataFrame is one batch of the
    stream (Spark has no order between partitions, so nothing is late), a streaming one has a
    batch per micro-batch."""

    df: object = None
    spark_only = True

    @property
    def streaming(self) -> bool:
        return bool(self.df.isStreaming)

    def raw_batches(self):
        raise NotImplementedError(f"{self.name}: a Spark DataFrame source runs on Spark: use "
                                  f"query.to_spark(), or execute() on StreamEnvironment.for_spark(spark)")


def spark_source(df, timestamp: str | None = None, watermark: WatermarkStrategy | None = None) -> SparkSource:
    from .session import require_pyspark
    require_pyspark()
    from pyspark.sql import DataFrame
    if not isinstance(df, DataFrame):
        raise TypeError(f"from_spark takes a pyspark.sql.DataFrame, got {type(df).__name__}")
    name = next_source_name("spark-stream" if df.isStreaming else "spark")
    return SparkSource(name, spark_schema_arrow(df), timestamp,
                       watermark or WatermarkStrategy.for_monotonous_timestamps(), df=df)
