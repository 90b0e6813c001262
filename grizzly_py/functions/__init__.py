"""Scalar functions: strings (``strings.py``) and dates and times (``datetimes.py``), each a
``FunctionSpec`` registered by name (``registry.py``); ``expressions.Call`` applies one."""

from . import datetimes, strings  # noqa: F401  (they register their functions)
from .registry import FunctionSpec, function_spec, function_specs, register

__all__ = ["FunctionSpec", "function_spec", "function_specs", "register"]
