"""DuckDB peer of YSB: SQL GROUP BY (window start, campaign_id) over the in-memory Arrow table."""

from __future__ import annotations

import pyarrow as pa

from .base import Peer, PeerUnavailable, window_result

SQL = """
SELECT (event_time // {w}) * {w} AS window_start, campaign_id, count(*) AS count
FROM ysb WHERE event_type = {view}
GROUP BY ALL
"""


class DuckDBPeer(Peer):
    name = "duckdb"
    description = "DuckDB SQL over the registered Arrow table (zero-copy scan)"

    def __init__(self, threads: int | None = None) -> None:
        super().__init__()
        self.threads = threads

    def setup(self, data) -> None:
        self.data = data
        try:
            import duckdb

            self.con = duckdb.connect()
            if self.threads:
                self.con.execute(f"SET threads = {int(self.threads)}")
            threads = self.con.sql("SELECT current_setting('threads')").fetchall()[0][0]
        except Exception as exc:  # noqa: BLE001 - any import/start failure makes the peer missing
            raise PeerUnavailable(f"duckdb: {exc!r}") from exc
        self.info.update(version=duckdb.__version__, threads=threads)
        view = getattr(data, "view_value", None)  # None: not YSB-shaped data (bench/suite.py)
        if view is not None:
            literal = "'" + view.replace("'", "''") + "'" if isinstance(view, str) else str(int(view))
            self.sql = SQL.format(w=int(data.window_ms), view=literal)

    def run(self) -> pa.Table:
        self.con.register("ysb", self.data.table)
        try:
            out = self.con.sql(self.sql).to_arrow_table()
        finally:
            self.con.unregister("ysb")
        return window_result(out["window_start"], out["campaign_id"], out["count"])

    def close(self) -> None:
        if getattr(self, "con", None) is not None:
            self.con.close()
            self.con = None
