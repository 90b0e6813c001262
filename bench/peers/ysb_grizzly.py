"""grizzly-py peer of YSB, written against the public API only (spec/api.md).

Each run is end to end: a fresh StreamEnvironment, building the query, compiling it and
executing it. grizzly-py caches compiled code in-process by IR hash, so the first run (which
compiles from scratch) is reported separately by the harness.
"""

from __future__ import annotations

import time

import pyarrow as pa

from .base import Peer, PeerUnavailable, window_result


class GrizzlyPeer(Peer):
    name = "grizzly"
    description = "grizzly-py, parallelism=1, end to end incl. query build and compile"

    def __init__(self, parallelism: int = 1, name: str | None = None, adaptive: bool = True) -> None:
        super().__init__()
        self.parallelism, self.adaptive = parallelism, adaptive
        if name is not None:
            self.name = name
        self.description = (f"grizzly-py, parallelism={parallelism}, "
                            f"{'adaptive' if adaptive else 'generic variant only'}, "
                            "end to end incl. query build and compile")

    def setup(self, data) -> None:
        self.data = data
        start = time.perf_counter()
        try:
            import grizzly_py as gz
            from grizzly_py.workloads.ysb import ysb_query
        except ModuleNotFoundError as exc:
            if exc.name != "grizzly_py":
                raise  # grizzly_py is there but broken: the harness reports it as failed
            raise PeerUnavailable(f"import grizzly_py: {exc!r}") from exc
        self.gz, self.ysb_query = gz, ysb_query
        self.info.update(
            version=getattr(gz, "__version__", "unknown"),
            threads=self.parallelism,
            import_s=time.perf_counter() - start,
        )

    def run(self) -> pa.Table:
        env = self.gz.StreamEnvironment(parallelism=self.parallelism, adaptive=self.adaptive)
        out = self.ysb_query(env, self.data.table, self.data.window_ms).execute_and_collect()
        return window_result(out["window_start"], out["campaign_id"], out["views"])
