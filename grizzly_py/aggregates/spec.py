"""What an aggregate function is: its call (``AggCall``), its descriptor (``AggregateSpec``) and
the registry of descriptors that the ``agg`` namespace, the code generator, the engine, Spark and
the reference evaluator ask.

An ``AggregateSpec`` says, for one function: the type of its result; the state it keeps per
group (words of 8 bytes, or a value vector for a holistic one); the template file of its IR
macros; which code paths can run it (a branch-free update for the dense pass, atomic updates for
a shared window state, whether float rounding makes it depend on the order of its inputs); what
a Spark partial state ships of it; and its reference implementation in plain Python. Each
function lives in a module of its own under ``aggregates/functions/`` and registers itself;
nothing else names an aggregate.

``kind`` below is what the update reads: ``"int"`` (integers and bools as int64), ``"float"``
(float64), ``"str"`` (a string, as the id the engine interns it to: ``engine/interning.py``) or
``None`` (``count``, which reads the validity only). Ids compare equal where strings do, so a
function that only tells values apart (``count_distinct``, ``first``, ``last``) runs on them as
on integers; one that orders strings (``min``, ``max``, ``mode``'s ties) names a string variant
(``for_argument``: ``aggregates/string_values.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Iterator

import pyarrow as pa

from ..expressions import Expr, as_expr, col
from ..lambdas import translate
from ..types import INT64, DataType, Schema, SchemaError


@dataclass(frozen=True, eq=False)
class AggCall:
    """``agg.<func>(arg)`` in a query: the function's name, its argument (None: ``count()``,
    which counts rows), ``k`` (``top_k``: how many values) and ``where`` (SQL's ``FILTER (WHERE
    ...)``: only the records for which it is true count; None: every record)."""

    func: str
    arg: Expr | None
    k: int | None = None
    where: Expr | None = None

    @property
    def spec(self) -> AggregateSpec:
        return spec_of(self.func)

    def output_type(self, schema: Schema) -> DataType:
        if self.where is not None and not self.where.dtype(schema).is_bool:
            raise SchemaError(f"agg.{self.func}(..., where={self.where!r}): the condition must be a boolean "
                              f"expression, got {self.where.dtype(schema)!r}")
        if self.arg is None:
            return INT64
        t = self.arg.dtype(schema)
        if t.is_list and self.func != "count":
            raise SchemaError(f"agg.{self.func} of {self.arg!r}: it is a {t.name} (a top_k result); lists can "
                              f"only be counted")
        return self.spec.output_type(self, t)

    def __repr__(self):
        text = self.spec.call_repr(self)
        return text if self.where is None else f"{text[:-1]}{', ' if text[-2] != '(' else ''}where={self.where!r})"


@dataclass(frozen=True)
class FrameMethod:
    """How an OVER frame computes an aggregate (``engine/over_frames.py``): the count of its valid
    values; their sum from prefix sums, divided by that count for a mean; or its extreme by a
    monotone deque (``extreme``: ``"low"`` or ``"high"``, which also takes bools)."""

    counts: bool = False
    sums: bool = False
    mean: bool = False
    extreme: str | None = None

    @property
    def reads_numbers(self) -> bool:
        """Whether it reads its argument's values as numbers (a count reads only validity)."""
        return not self.counts

    @property
    def takes_bools(self) -> bool:
        return self.extreme is not None


class AggregateSpec:
    """One aggregate function (see the module docstring). Subclasses set the class attributes
    and override the methods that differ from these defaults (a decomposable function over a few
    state words)."""

    name: str
    template: str            # its IR macros, under codegen_templates/ (update, merge, emit; see aggregates.ll.j2)
    holistic = False         # keeps every value of a group in a vector {data, length, capacity}
    reads = "value"          # what its update reads: "value", "validity" (count) or "key" (holistic
                             # functions that order their values: the value as an order-preserving
                             # int64 key, runtime/vectors.ll)
    atomic = False           # its template has atomic_init/atomic_update (a shared window state)
    ordered = False          # its update reads each record's event time (a.ts) and arrival position
                             # (a.pos), and its reference the (event time, arrival, value) of each value
    list_result = False      # the result is a list (its emit writes an output vector)
    frame: FrameMethod | None = None  # how an OVER frame computes it (None: not over frames)
    public = True            # users call it as agg.<name> (else operators use it internally)
    retractable = False      # its update takes a.sign: -1 retracts an input (an updating stream's
                             # -U/-D row), so it can aggregate an updating stream
    kept_after_emit = False  # a holistic state that an emit leaves in place (a running aggregate's)
    string_order = False     # over strings, its update reads each string's order key too (a.prefix:
                             # engine/string_order.py), as well as its interned id
    carries_strings = False  # over strings, it only keeps one of its inputs, never compares, hashes
                             # or orders them: an id by arrival position does (engine/carried_strings.py)

    def call(self, *args, **kwargs) -> AggCall:
        """The constructor users call as ``agg.<name>(...)``."""
        raise NotImplementedError

    def for_argument(self, arg_type: DataType | None) -> AggregateSpec:
        """The descriptor that runs this function over an argument of ``arg_type`` (None:
        ``count()``): itself, unless it orders strings (see the module docstring)."""
        return self

    def output_type(self, call: AggCall, arg_type: DataType) -> DataType:
        """The result's type for an argument of ``arg_type``; a ``SchemaError`` if it takes none such."""
        raise NotImplementedError

    def counts_records(self, call: AggCall) -> bool:
        """Whether ``call`` is the number of records of its group, whatever their values
        (``count()``: a join that only counts its pairs need not build them)."""
        return False

    def state_words(self, kind: str | None) -> int:
        """Words of state per group (a vector's three words for a holistic function)."""
        return 3 if self.holistic else 1

    def running(self, updating: bool) -> AggregateSpec | None:
        """The descriptor that runs this function in a running aggregate (``keyed.aggregate``
        without a window), over an ``updating`` input or not; None where it cannot run there.
        A decomposable function runs as it is, over an updating input only if it is
        ``retractable``; a holistic one needs a state that outlives an emit."""
        if self.holistic or (updating and not self.retractable):
            return None
        return self

    def result_store(self, kind: str | None) -> str:
        """How the finalizer stores a result: ``"i64"`` or ``"double"`` (a list's elements, for a
        list result); ``"string"``: an interned id the engine decodes, ``"strings"``: a list of
        interned ids the engine decodes and hands to ``finish``."""
        if kind == "str":
            return "strings" if self.list_result else "string"
        return "double" if kind == "float" else "i64"

    def finish(self, values: pa.ListArray) -> pa.Array:
        """A ``"strings"`` result: each group's result from its list of strings."""
        raise NotImplementedError

    def count_slot(self, kind: str | None) -> int | None:
        """The state word that counts the group's non-null inputs, where the update is branch-free
        (the dense pass updates every row with its validity: ``codegen/dense_pass.py``); None
        where it branches."""
        return None

    def order_sensitive(self, kind: str | None) -> bool:
        """Whether the result can depend on the order of the inputs (float rounding): sort
        grouping then keeps a key's rows in arrival order."""
        return False

    def invertible(self, kind: str | None) -> bool:
        """Whether a state merged into another can be taken back out of it exactly (its template
        has ``subtract``): a sliding window's state then carries over to the next window, less
        the panes that leave it (``engine/pane_accumulator.py``). Exact integer arithmetic only:
        a float sum rounds differently once values leave it, an extreme or a holistic state
        cannot give a value back."""
        return False

    def merge_exact(self, kind: str | None) -> bool:
        """Whether merging states gives the same state, bit for bit, however they are grouped and
        ordered: a cumulative window's state then grows pane by pane from the window before
        (``engine/pane_accumulator.py``) instead of merging its panes afresh. Every invertible
        function's merge is exact; a float sum or variance rounds by the order of its merges."""
        return self.invertible(kind)

    def retracts_exactly(self, kind: str | None) -> bool:
        """Whether, in a running aggregate over an updating input, the state depends only on
        which inputs are in, not on the order and grouping of the rows that add and take them
        out: a running aggregate upstream may then emit one change per key and batch
        (``engine/mini_batch.py``). Exact integer arithmetic (``invertible``) and value bags do;
        a float sum rounds by its order, ``first``/``last`` keep an order."""
        return self.invertible(kind)

    def partial_values(self, call: AggCall) -> int | None:
        """A holistic function's values that a partial state needs to ship (None: all of them)."""
        return None

    def reference(self, call: AggCall, arg_type: DataType | None, values: list, rows: int):
        """The result over one group, in plain Python (the reference evaluator): ``values`` are
        the argument's non-null values in arrival order (for an ``ordered`` function, (event
        time, arrival number, value) triples), ``rows`` the group's records."""
        raise NotImplementedError

    def call_repr(self, call: AggCall) -> str:
        return f"agg.{call.func}({'' if call.arg is None else repr(call.arg)})"

    def __repr__(self):
        return f"<aggregate {self.name}>"


class RunningForm(AggregateSpec):
    """The form of aggregate ``base`` that a running aggregate runs (``AggregateSpec.running``
    hands it out; not registered): users call ``base``, its type and reference are ``base``'s,
    only the state and its update differ (a value bag, a sequence of values)."""

    public = False
    kept_after_emit = True

    def __init__(self, base: AggregateSpec):
        self.name = base.name
        self.base = base

    def call(self, *args, **kwargs):
        return self.base.call(*args, **kwargs)

    def output_type(self, call, arg_type):
        return self.base.output_type(call, arg_type)

    def running(self, updating):
        return self

    def reference(self, call, arg_type, values, rows):
        return self.base.reference(call, arg_type, values, rows)

    def call_repr(self, call):
        return self.base.call_repr(call)


_REGISTRY: dict[str, AggregateSpec] = {}


class agg:  # noqa: N801 - a namespace named as in api.md
    """Namespace of aggregate constructors: one per registered ``AggregateSpec``."""


def register(spec: AggregateSpec) -> AggregateSpec:
    """Make ``spec`` known (``spec_of``) and, if it is ``public``, its constructor ``agg.<name>``,
    which also takes ``where=`` (every aggregate does)."""
    if spec.name in _REGISTRY:
        raise ValueError(f"aggregate {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    if not spec.public:
        return spec

    @functools.wraps(spec.call)
    def constructor(*args, where=None, **kwargs) -> AggCall:
        call = spec.call(*args, **kwargs)
        return call if where is None else replace(call, where=condition(where, spec.name))
    constructor.__doc__ = (spec.call.__doc__ or "") + ("\n\n``where=expr``: only the records for which "
                                                      "``expr`` is true count (SQL ``FILTER (WHERE ...)``).")
    setattr(agg, spec.name, staticmethod(constructor))
    return spec


def spec_of(name: str) -> AggregateSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown aggregate {name!r}; aggregates: {', '.join(_REGISTRY)}") from None


def as_spec(function: str | AggregateSpec) -> AggregateSpec:
    """A descriptor, from itself or its function's name."""
    return function if isinstance(function, AggregateSpec) else spec_of(function)


def specs() -> Iterator[AggregateSpec]:
    """Every registered aggregate, in registration order."""
    return iter(_REGISTRY.values())


def argument(c) -> Expr:
    """An aggregate's argument: a column name or an expression."""
    return col(c) if isinstance(c, str) else as_expr(c)


def condition(where, name: str) -> Expr:
    """An aggregate's ``where=``: an expression (or a restricted lambda), not a column name."""
    if isinstance(where, str):
        raise TypeError(f"agg.{name}(..., where=...): expected a boolean expression such as col('price') > 10, "
                        f"got the string {where!r}")
    return translate(where, what=f"agg.{name}(..., where=...)")


class AggregateOverflowError(ArithmeticError):
    """An int64 sum (or the sum behind an int64 average) does not fit in int64."""
