"""The aggregate functions, one module each; importing this package registers them, in the order
of the ``agg`` namespace's listing (``aggregates.spec.specs``)."""

from . import count, sum, avg, min_max, variance, median, mode, count_distinct, top_k  # noqa: F401
