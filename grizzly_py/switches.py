"""Switches for optional plan choices (the plan rewrites, counted join pairs): on unless the
environment turns one off (``GRIZZLY_<NAME>=off``, ``0`` or ``no``) or a test does within a
block (``disabled()``), to compare the choice against the plan as written."""

from __future__ import annotations

import os
from contextlib import contextmanager


class Switch:
    """One choice's switch, read from environment variable ``variable`` at each ``enabled()``."""

    def __init__(self, variable: str):
        self.variable = variable
        self._off = False

    @contextmanager
    def disabled(self):
        """Within the block, the choice is off."""
        before, self._off = self._off, True
        try:
            yield
        finally:
            self._off = before

    def enabled(self) -> bool:
        return not self._off and os.environ.get(self.variable, "on").lower() not in ("off", "0", "no")


__all__ = ["Switch"]
