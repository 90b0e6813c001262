"""The ``slow`` marker for one parameter of a parametrized test.

``pytest -m "not slow"`` is the contributors' fast subset (README, "Development"); the full suite
runs everything. A whole test is marked with ``@pytest.mark.slow``; where a parametrized test is
fast on a few of its parameters and slow on the whole matrix, the fast subset keeps those few.
"""

from __future__ import annotations

import pytest


def slow(*values):
    """One parameter set that runs in the full suite only."""
    return pytest.param(*values, marks=pytest.mark.slow)


def all_but(values, fast) -> list:
    """``values`` as parameters, each one not in ``fast`` marked slow."""
    return [v if v in fast else slow(v) for v in values]
