"""``LateRecord``: the predicate that picks the records a window drops as late, for
``late_data(tag)`` (``plan.LateDataNode``).

The physical plan (``physical/pipelines.py``) lowers a late-data stream to the window's input
pipeline with one more filter, ``LateRecord(event time, geometry, allowed lateness)``: true where
every window holding the record has been cleaned under the watermark in force while its batch is
processed (the last one: ``geometry.last_end(ts) - 1 + lateness <= watermark``), the rule the
window's fused loop applies before it drops a record (``window_assign.ll.j2``). The code
generator reads the watermark from the kernel's parameters (``expr_emitter._LateRecord``); the
engine passes each stateless pipeline the watermark in force. It exists only in physical plans:
the reference evaluator runs ``LateDataNode`` itself (``reference.LateData``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .expressions import Expr
from .types import BOOL
from .window_geometry import PaneGeometry


@dataclass(frozen=True, eq=False, repr=False)
class LateRecord(Expr):
    time: Expr              # the record's event time (int64 ms)
    geometry: PaneGeometry  # the window's
    lateness_ms: int        # its allowed lateness

    def dtype(self, schema):
        return BOOL

    def children(self):
        return (self.time,)

    def substitute(self, mapping):
        return LateRecord(self.time.substitute(mapping), self.geometry, self.lateness_ms)

    def __repr__(self):
        return f"late_for({self.time!r}, {self.geometry.describe()}, allowed lateness {self.lateness_ms} ms)"


__all__ = ["LateRecord"]
