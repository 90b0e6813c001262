"""Apache Flink peer, through PyFlink's Table API/SQL in streaming mode, in its own virtual
environment (PyFlink pins pyarrow, numpy and py4j versions that clash with PySpark and with this
project's).

The virtual environment lives in ``$GRIZZLY_FLINK_VENV`` (default
``~/.cache/grizzly-py/flink-venv``). If it is missing, ``setup`` creates it and installs
``apache-flink`` (once, untimed, several minutes) unless installing is turned off
(``install=False``: ``grizzly bench --no-install``); if that fails, or no Java runtime is found,
the peer is reported missing with the reason.

Each data set is written once as a header-less CSV file (untimed, by the runner) and read by
Flink's filesystem connector with event time ``TO_TIMESTAMP_LTZ(<ms column>, 3)`` and the
watermark ``ts - 1 ms`` (monotonous timestamps, as grizzly-py's default): one source table
``src``, or, for a join's data set of several tables, one source table per table, named as in
the data set (``person``, ``auction``; ``left``, ``right``). Joins are window joins (a join of
two window TVFs or window aggregates on ``window_start``, ``window_end`` and the key). ``setup`` starts one
worker process (``flink_worker.py``: one JVM and TableEnvironment for all cases); each timed run
is one INSERT job into a CSV sink in a fresh directory, then the result is read back and
normalized. Flink's own fixed cost per job (~1 s) is part of every run.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv

from grizzly_py.workloads import adaptive, nexmark, streambox

from ..window_workloads import ranked, slide_ms, windowed
from . import nexmark_tables
from .base import Peer, PeerUnavailable, table_of
from .suite import SuiteMixin

FLINK_REQUIREMENT = "apache-flink>=2.3,<2.4"
WORKER = Path(__file__).with_name("flink_worker.py")
START_TIMEOUT_S = 300
JOB_TIMEOUT_S = 1800


def venv_dir() -> Path:
    return Path(os.environ.get("GRIZZLY_FLINK_VENV", Path.home() / ".cache" / "grizzly-py" / "flink-venv"))


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def install_venv(log=print) -> None:
    """Create the PyFlink virtual environment; raise PeerUnavailable with the reason on failure."""
    target = venv_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    log(f"flink: creating {target} and installing {FLINK_REQUIREMENT} (once) ...")
    for cmd in ([sys.executable, "-m", "venv", "--clear", str(target)],
                [str(target / "bin" / "pip"), "install", "-q", FLINK_REQUIREMENT]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.SubprocessError) as exc:
            raise PeerUnavailable(f"{' '.join(cmd)}: {exc!r}") from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise PeerUnavailable(f"{' '.join(cmd)} failed: {' | '.join(tail)}")


def _flink_type(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_integer(t):
        return "INT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "STRING"
    raise ValueError(f"flink peer: no Flink type for {t}")


def _interval(ms: int) -> str:
    return f"INTERVAL '{ms // 1000}' SECOND" if ms % 1000 == 0 else f"INTERVAL '{ms / 1000:.3f}' SECOND(3)"


def _literal(v) -> str:
    return "'" + v.replace("'", "''") + "'" if isinstance(v, str) else str(int(v))


class FlinkSuite(SuiteMixin, Peer):
    name = "flink"
    description = "Apache Flink (PyFlink Table API/SQL, streaming mode, window TVFs), from CSV"
    needs_csv = True

    def __init__(self, threads: int = 1, install: bool = True) -> None:
        super().__init__()
        self.threads, self.install = threads, install
        self.proc: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    # -- the queries: (output columns and Flink types, SELECT over the source ``src``) --

    def _ysb_select(self, where: str) -> tuple[list, str]:
        w = self.data.window_ms
        return ([("ws", "STRING"), ("campaign_id", "BIGINT"), ("n", "BIGINT")],
                f"SELECT CAST(window_start AS STRING), campaign_id, COUNT(*) FROM TABLE(TUMBLE(TABLE src, "
                f"DESCRIPTOR(ts), {_interval(w)})) WHERE {where} GROUP BY window_start, window_end, campaign_id")

    def ysb(self, _p):
        return self._ysb_select(f"event_type = {_literal(self.data.view_value)}")

    state_size = adaptive_range = adaptive_skew = ysb

    def adaptive_selectivity(self, _p):
        preds = [f"event_type = {_literal(self.data.view_value)}"] + [
            f"p{j + 1} >= {adaptive.PREDICATE_MIN}" for j in range(len(adaptive.SELECTIVITIES))]
        return self._ysb_select(" AND ".join(preds))

    def agg_types(self, name: str):
        value = {"sum": ("SUM(price)", "DOUBLE"), "count": ("COUNT(*)", "BIGINT"),
                 "avg": ("AVG(price)", "DOUBLE"), "stddev_pop": ("STDDEV_POP(price)", "DOUBLE")}.get(name)
        if value is None:
            raise NotImplementedError(f"flink peer: Flink SQL has no {name} aggregate")
        w = self.data.window_ms
        return ([("ws", "STRING"), ("campaign_id", "BIGINT"), ("value", value[1])],
                f"SELECT CAST(window_start AS STRING), campaign_id, {value[0]} FROM TABLE(TUMBLE(TABLE src, "
                f"DESCRIPTOR(ts), {_interval(w)})) WHERE event_type = {_literal(self.data.view_value)} "
                "GROUP BY window_start, window_end, campaign_id")

    def concurrent_windows(self, c: int):
        w = self.data.window_ms
        if w % slide_ms(c):
            raise NotImplementedError(f"flink peer: HOP needs the size to be a multiple of the slide "
                                      f"({w} ms, {slide_ms(c)} ms)")
        return ([("ws", "STRING"), ("campaign_id", "BIGINT"), ("value", "BIGINT")],
                f"SELECT CAST(window_start AS STRING), campaign_id, COUNT(*) FROM TABLE(HOP(TABLE src, "
                f"DESCRIPTOR(ts), {_interval(slide_ms(c))}, {_interval(w)})) WHERE event_type = "
                f"{_literal(self.data.view_value)} GROUP BY window_start, window_end, campaign_id")

    def selection(self, bound: int):
        return ([("event_time", "BIGINT"), ("key", "BIGINT"), ("value", "INT")],
                f"SELECT event_time, key, `value` FROM src WHERE `value` < {int(bound)}")

    def nexmark_q1(self, _p):
        return ([("auction", "BIGINT"), ("bidder", "BIGINT"), ("price", "DOUBLE"), ("dateTime", "BIGINT")],
                "SELECT auction, bidder, CAST(0.908 AS DOUBLE) * price, `dateTime` FROM src")

    def nexmark_q2(self, _p):
        return ([("auction", "BIGINT"), ("price", "BIGINT")],
                f"SELECT auction, price FROM src WHERE MOD(auction, {nexmark.Q2_MODULUS}) = 0")

    def nexmark_q5(self, p):
        counts = ("SELECT window_start, window_end, window_time, auction, COUNT(*) AS num FROM TABLE(HOP("
                  f"TABLE src, DESCRIPTOR(ts), {_interval(nexmark.Q5_SLIDE_MS)}, {_interval(nexmark.Q5_SIZE_MS)})) "
                  "GROUP BY window_start, window_end, window_time, auction")
        maxima = f"SELECT window_start, window_end, MAX(num) AS max_num FROM ({counts}) GROUP BY window_start, window_end"
        if p == "hot-items":
            return ([("we", "STRING"), ("auction", "BIGINT"), ("num", "BIGINT")],
                    f"SELECT CAST(C.window_end AS STRING), C.auction, C.num FROM ({counts}) C JOIN ({maxima}) M "
                    "ON C.window_start = M.window_start AND C.window_end = M.window_end AND C.num = M.max_num")
        return ([("we", "STRING"), ("max_num", "BIGINT")],
                f"SELECT CAST(window_end AS STRING), max_num FROM ({maxima})")

    def nexmark_q7(self, _p):
        tvf = f"TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), {_interval(nexmark.Q7_WINDOW_MS)}))"
        return ([("we", "STRING"), ("auction", "BIGINT"), ("bidder", "BIGINT"), ("price", "BIGINT"),
                 ("dateTime", "BIGINT")],
                f"SELECT CAST(B.window_end AS STRING), B.auction, B.bidder, B.price, B.`dateTime` "
                f"FROM (SELECT * FROM {tvf}) B JOIN (SELECT window_start, window_end, MAX(price) AS maxprice "
                f"FROM {tvf} GROUP BY window_start, window_end) M ON B.window_start = M.window_start "
                "AND B.window_end = M.window_end AND B.price = M.maxprice")

    def nexmark_q8(self, _p):
        def tvf(name):
            return f"TABLE(TUMBLE(TABLE {name}, DESCRIPTOR(ts), {_interval(nexmark.Q8_WINDOW_MS)}))"
        # the auctions counted per seller and window, then window-joined with the persons: one
        # row per person and window, as the join followed by a count (person ids are unique)
        return ([("ws", "STRING"), ("id", "BIGINT"), ("name", "STRING"), ("auctions", "BIGINT")],
                f"SELECT CAST(P.window_start AS STRING), P.id, P.name, A.n FROM (SELECT * FROM {tvf('person')}) P "
                f"JOIN (SELECT window_start, window_end, seller, COUNT(*) AS n FROM {tvf('auction')} "
                "GROUP BY window_start, window_end, seller) A ON P.window_start = A.window_start "
                "AND P.window_end = A.window_end AND P.id = A.seller")

    def _temporal_join(self):
        def tvf(name):
            return f"TABLE(TUMBLE(TABLE `{name}`, DESCRIPTOR(ts), {_interval(streambox.WINDOW_MS)}))"
        return ([("ws", "STRING"), ("key", "BIGINT"), ("event_time", "BIGINT"), ("value", "BIGINT"),
                 ("event_time_right", "BIGINT"), ("value_right", "BIGINT")],
                "SELECT CAST(L.window_start AS STRING), L.key, L.event_time, L.`value`, R.event_time, "
                f"R.`value` FROM (SELECT * FROM {tvf('left')}) L JOIN (SELECT * FROM {tvf('right')}) R "
                "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.key = R.key")

    def streambox(self, bench: str):
        if bench == "temporal-join":
            return self._temporal_join()
        tvf = f"TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), {_interval(streambox.WINDOW_MS)}))"
        if bench == "avg-all":
            return ([("ws", "STRING"), ("value", "DOUBLE")],
                    f"SELECT CAST(window_start AS STRING), AVG(CAST(`value` AS DOUBLE)) FROM {tvf} "
                    "GROUP BY window_start, window_end")
        if bench == "topk-per-key":  # Flink's window Top-N over the window TVF
            return ([("ws", "STRING"), ("key", "BIGINT"), ("rank", "BIGINT"), ("value", "BIGINT")],
                    "SELECT CAST(window_start AS STRING), key, rownum - 1, `value` FROM ("
                    "SELECT window_start, window_end, key, `value`, ROW_NUMBER() OVER (PARTITION BY "
                    f"window_start, window_end, key ORDER BY `value` DESC) AS rownum FROM {tvf}) "
                    f"WHERE rownum <= {streambox.TOP_K}")
        agg = {"sum-per-key": ("SUM(`value`)", "BIGINT"), "avg-per-key": ("AVG(CAST(`value` AS DOUBLE))", "DOUBLE"),
               "unique-count-per-key": ("COUNT(DISTINCT `value`)", "BIGINT"),
               "windowed-filter": ("COUNT(*)", "BIGINT")}.get(bench)
        if agg is None:
            raise NotImplementedError(f"flink peer: no streambox {bench} (Flink SQL has no median)")
        where = f"WHERE `value` >= {streambox.FILTER_MIN}" if bench == "windowed-filter" else ""
        return ([("ws", "STRING"), ("key", "BIGINT"), ("value", agg[1])],
                f"SELECT CAST(window_start AS STRING), key, {agg[0]} FROM {tvf} {where} "
                "GROUP BY window_start, window_end, key")

    def nexmark_tables(self, case: str):
        if case == "q11":  # Flink's session window TVF: the window ends one gap after its last bid
            return ([("bidder", "BIGINT"), ("ws", "STRING"), ("we", "STRING"), ("bid_count", "BIGINT")],
                    "SELECT bidder, CAST(window_start AS STRING), CAST(window_end AS STRING), COUNT(*) FROM "
                    f"TABLE(SESSION(TABLE `bid` PARTITION BY bidder, DESCRIPTOR(ts), {_interval(nexmark.Q11_GAP_MS)})) "
                    "GROUP BY bidder, window_start, window_end")
        return self._table_columns(case), nexmark_tables.table_sql(case, "`")

    def nexmark_q23(self, _p):
        return self._table_columns("q23"), nexmark_tables.table_sql("q23", "`")

    def nexmark_updating(self, case: str):
        day = "DATE_FORMAT(TO_TIMESTAMP_LTZ(`dateTime`, 3), 'yyyy-MM-dd')"
        minute = "DATE_FORMAT(TO_TIMESTAMP_LTZ(`dateTime`, 3), 'HH:mm')"
        return self._table_columns(case), nexmark_tables.updating_sql(case, "`", day, minute)

    def _table_columns(self, case: str) -> list[tuple[str, str]]:
        """The Flink types of ``case``'s output columns (those of the inputs, counts BIGINT)."""
        types = {f.name: _flink_type(f.type) for table in self.data.tables.values() for f in table.schema}
        counts = ("rank1_bids", "rank2_bids", "rank3_bids", *nexmark_tables.STATISTICS)
        types.update({n: "BIGINT" for n in counts}, bid_dateTime="BIGINT", bid_extra="STRING",
                     auction_dateTime="BIGINT", person_id="BIGINT", day="STRING", minute="STRING",
                     avg_final="DOUBLE", avg_price="DOUBLE", min_price="BIGINT", max_price="BIGINT",
                     sum_price="BIGINT", rank="BIGINT")
        return [(n, types[n]) for n in nexmark_tables.OUTPUT[case]]

    # -- the peer --

    def describe(self, workload: str) -> str:
        return self.description

    def setup(self, data) -> None:
        self.data = data
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise PeerUnavailable("no Java runtime (java not on PATH, JAVA_HOME unset)")
        if not venv_python().exists():
            if not self.install:
                raise PeerUnavailable(f"no PyFlink virtual environment at {venv_dir()} "
                                      "(installing turned off)")
            start = time.perf_counter()
            install_venv()
            self.info["install_s"] = time.perf_counter() - start
        self._tmp = tempfile.TemporaryDirectory(prefix="grizzly-bench-flink-")
        self._log = open(Path(self._tmp.name) / "worker.log", "w")
        start = time.perf_counter()
        self.proc = subprocess.Popen([str(venv_python()), str(WORKER), str(self.threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     text=True, bufsize=1)
        ready = self._read(START_TIMEOUT_S)
        if not ready.get("ready"):
            raise PeerUnavailable(f"PyFlink worker did not start: {ready}")
        self.info.update(version=ready.get("version"), threads=self.threads,
                         session_start_s=time.perf_counter() - start,
                         notes="JVM start and CSV write excluded from timing; each run is one "
                               "Flink job reading the CSV file and writing a CSV sink")
        self._runs = 0

    def _read(self, timeout: float) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self._log.flush()
            tail = Path(self._log.name).read_text()[-1500:]
            raise RuntimeError(f"PyFlink worker {'timed out' if not ready else 'exited'}: {tail}")
        return json.loads(line)

    def prepare(self, case) -> None:
        self.case = case
        method = getattr(self, case.workload.replace("-", "_"), None)
        if method is None:
            raise NotImplementedError(f"flink peer has no {case.workload} query")
        self.out_cols, self.select = method(case.param)
        # an updating query's final table comes from batch mode: the file sink takes append-only streams
        self.batch = case.workload == "nexmark-updating"

    def run(self) -> pa.Table:
        self._runs += 1
        out_dir = Path(self._tmp.name) / f"out{self._runs}"
        tables = self.data.tables
        ddl = []
        for name, table in tables.items():
            sql_name = "src" if len(tables) == 1 else f"`{name}`"
            time_col = next((c for c in ("dateTime", "event_time") if c in table.schema.names), None)
            cols = ", ".join(f"`{f.name}` {_flink_type(f.type)}" for f in table.schema)
            rowtime = (f", ts AS TO_TIMESTAMP_LTZ(`{time_col}`, 3), WATERMARK FOR ts AS ts - INTERVAL '0.001' SECOND"
                       if time_col else "")  # (a static side input has no time)
            ddl += [f"DROP TEMPORARY TABLE IF EXISTS {sql_name}",
                    f"CREATE TEMPORARY TABLE {sql_name} ({cols}{rowtime}) WITH ('connector' = 'filesystem', "
                    f"'path' = '{self.data.csv_path(name)}', 'format' = 'csv')"]
        ddl += [
            "DROP TEMPORARY TABLE IF EXISTS sink",
            "CREATE TEMPORARY TABLE sink (" + ", ".join(f"`{n}` {t}" for n, t in self.out_cols)
            + f") WITH ('connector' = 'filesystem', 'path' = '{out_dir}', 'format' = 'csv')",
        ]
        request = {"ddl": ddl, "insert": f"INSERT INTO sink {self.select}", "batch": self.batch}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = self._read(JOB_TIMEOUT_S)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        self.info.setdefault("job_seconds", []).append(round(answer["seconds"], 3))
        return self._normalize(self._read_out(out_dir))

    def _read_out(self, out_dir: Path) -> pa.Table:
        names = [n for n, _ in self.out_cols]
        types = {n: {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "DOUBLE": pa.float64()}[t]
                 for n, t in self.out_cols}
        parts = [p for p in sorted(out_dir.rglob("*")) if p.is_file() and not p.name.startswith(".")]
        tables = [pcsv.read_csv(p, read_options=pcsv.ReadOptions(column_names=names),
                                convert_options=pcsv.ConvertOptions(column_types=types))
                  for p in parts if p.stat().st_size]
        if not tables:
            return pa.table({n: pa.array([], type=types[n]) for n in names})
        return pa.concat_tables(tables)

    def _normalize(self, out: pa.Table) -> pa.Table:
        w, p = self.case.workload, self.case.param

        def ms(column):
            return column.cast(pa.timestamp("ms")).cast(pa.int64())

        if w in ("nexmark-tables", "nexmark-updating", "nexmark-q23"):
            case = "q23" if w == "nexmark-q23" else p
            if case == "q11":
                return nexmark_tables.normalized_table(case, {"bidder": out["bidder"], "window_start": ms(out["ws"]),
                                                              "window_end": ms(out["we"]),
                                                              "bid_count": out["bid_count"]})
            return nexmark_tables.normalized_table(case, out)
        if w in ("selection", "nexmark-q1", "nexmark-q2"):
            return table_of(**{n: out[n] for n in out.column_names})
        if w in ("nexmark-q5", "nexmark-q7"):
            return table_of(window_end=ms(out["we"]), **{n: out[n] for n in out.column_names[1:]})
        if w == "nexmark-q8" or (w == "streambox" and p == "temporal-join"):
            return table_of(window_start=ms(out["ws"]), **{n: out[n] for n in out.column_names[1:]})
        if w == "streambox" and p == "avg-all":
            return table_of(window_start=ms(out["ws"]), value=out["value"])
        if w == "streambox" and p == "topk-per-key":
            return ranked(ms(out["ws"]), out["key"], out["rank"], out["value"])
        key = "key" if w == "streambox" else "campaign_id"
        return windowed(ms(out["ws"]), out[key], out[out.column_names[-1]])

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self._tmp is not None:
            self._log.close()
            self._tmp.cleanup()
            self._tmp = None
