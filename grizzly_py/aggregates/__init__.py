"""Aggregate functions: ``agg.count()``, ``agg.sum(c)``, ... as immutable call descriptions
(``AggCall``), each described once by an ``AggregateSpec`` registered from its own module under
``functions/`` (``spec.py`` says what a spec holds).

Aggregates skip nulls; a group whose inputs are all null gets a null result, except ``count``
which gives 0, ``count_distinct`` 0 and ``top_k`` an empty list.
"""

from .spec import AggCall, AggregateOverflowError, AggregateSpec, agg, as_spec, register, spec_of, specs
from . import functions  # noqa: F401  (registers every function)
from .functions.top_k import MAX_TOP_K

__all__ = ["AggCall", "AggregateOverflowError", "AggregateSpec", "MAX_TOP_K", "agg", "as_spec", "register", "spec_of", "specs"]
