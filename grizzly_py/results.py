"""``JobResult``: what a finished job hands back, whichever engine ran it.

It sits below the environment and the engines (the embedded one in ``engine/local.py``, Spark in
``spark/planner.py``), so that both build it without importing the user-facing API;
``grizzly_py.JobResult`` is this class.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa


@dataclass
class JobResult:
    """What ``execute`` returns: collected tables by sink name, and the job's metrics."""

    tables: dict[str, pa.Table]
    metrics: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> pa.Table:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no collecting sink named {name!r}; sinks: {', '.join(self.tables) or '(none)'}") from None

    def __contains__(self, name):
        return name in self.tables
