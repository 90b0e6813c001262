"""What a scalar function is (``FunctionSpec``) and the registry of them.

A function call in a query is an ``expressions.Call``: the function's name, its argument
expressions and its literal options (a pattern, an offset...). Its spec says, once for every
layer: the result's type for the argument types (a ``SchemaError`` otherwise), how to check the
options when the query is defined, and its reference implementation in plain Python. The code
generator registers an emitter per name (``codegen/functions.py``). Each family of functions
lives in a module of its own (``strings.py``, ``datetimes.py``) and registers its specs.

Every function is null-in, null-out: the reference calls ``reference`` only when no argument is
null, and the result is null otherwise.
"""

from __future__ import annotations

from typing import Any, Iterator

from ..types import DataType, SchemaError


class FunctionSpec:
    """One scalar function (see the module docstring)."""

    name: str            # as ``Call.func``: "str.contains", "dt.year", "concat_str"
    arity: int = 1       # arguments (expressions); -1: one or more

    def check_options(self, options: dict[str, Any]) -> None:
        """Raise ``ValueError``/``TypeError`` (named for the user) for options that make no sense."""

    def output_type(self, call, arg_types: list[DataType]) -> DataType:
        raise NotImplementedError

    def reference(self, call, *args):
        """The result for non-null ``args`` (Python values: ``str``, ``int`` ms for times)."""
        raise NotImplementedError

    def describe(self, call) -> str:
        """The call as the code that builds it."""
        head, *rest = call.args
        options = ", ".join(f"{k}={v!r}" for k, v in call.options)
        method = self.name.split(".", 1)[1] if "." in self.name else self.name
        inner = ", ".join([repr(a) for a in rest] + ([options] if options else []))
        namespace = self.name.split(".", 1)[0] if "." in self.name else None
        return f"{head!r}.{namespace}.{method}({inner})" if namespace else f"{self.name}({head!r}, {inner})"

    @staticmethod
    def require(arg: DataType, what: str, call, ok: bool) -> None:
        if not ok:
            raise SchemaError(f"{call!r}: {what}, got {arg.name}")


_REGISTRY: dict[str, FunctionSpec] = {}


def register(spec: FunctionSpec) -> FunctionSpec:
    if spec.name in _REGISTRY:
        raise ValueError(f"function {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def function_spec(name: str) -> FunctionSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown function {name!r}; functions: {', '.join(_REGISTRY)}") from None


def function_specs() -> Iterator[FunctionSpec]:
    return iter(_REGISTRY.values())
