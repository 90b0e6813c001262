"""grizzly-py: an adaptive query compiler for stream processing in Python.

Users write Flink-like queries (``StreamEnvironment``, ``col``, ``agg``, window assigners);
grizzly-py lowers them through a chain of pure phases, DSL -> logical plan (``plan``) ->
physical pipelines (``physical``) -> LLVM IR (``codegen``) -> machine code (``jit``), and runs
the compiled pipelines on Arrow buffers (``engine``). ``reference`` is the plain-Python oracle.
"""

from .aggregates import agg
from .environment import StreamEnvironment
from .expressions import col, concat_str, if_else, lit
from .lambdas import LambdaTranslationError
from .results import JobResult, LateRecordsWarning, job_metrics
from .sources import BadInputError
from .time import Duration, Time
from .types import SchemaError
from .version import __version__
from .watermark import WatermarkStrategy


__all__ = ["StreamEnvironment", "JobResult", "job_metrics", "col", "lit", "if_else", "concat_str", "agg", "Time", "Duration",
           "WatermarkStrategy", "SchemaError", "BadInputError", "LambdaTranslationError", "LateRecordsWarning"]
