"""Per-record counters for ``grizzly bench`` (Grizzly paper table 1).

Where the host has hardware performance counters (``perf_event_open`` with
``PERF_TYPE_HARDWARE`` works), each peer's run is counted in a forked child: instructions, branch
misses and cache misses (user space, the calling thread and the threads it starts afterwards),
divided by the input records. Where it has none (this project's development machines: "no PMU",
the probe says why), instructions per record come from ``valgrind --tool=callgrind`` instead:
each peer runs in a Python process under callgrind with instrumentation off (imports, data
generation, compilation and one warm-up run are not counted), then one run at each of two input
sizes is counted between client requests (``CALLGRIND_START/STOP_INSTRUMENTATION``, a small C
helper built with gcc), and the marginal cost ``(I(n2) - I(n1)) / (n2 - n1)`` removes the fixed
per-run cost. Instruction counts are deterministic, unlike times on a shared machine. JVM peers
(Spark, Flink) are not run under valgrind.

    python -m bench.counters                 # probe and measure (ysb, selection), print JSON
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grizzly_py.counters import perf  # the one ctypes perf_event_attr

from .suite_options import PEERS as SPECS
from .suite_options import Options
from .workloads import WORKLOADS as WL

# the folder holding this package's top level (the checkout, or site-packages for
# grizzly_py.bench): the worker processes import the package from there
PACKAGE_ROOT = Path(__file__).resolve().parents[__package__.count(".") + 1]
WORKLOADS = ("ysb", "selection")
CASES = {"ysb": None, "selection": 50}
PEERS = ("grizzly", "c", "c_dense", "numpy", "polars", "duckdb")
TIMEOUT_S = 900

HW_EVENTS = {name: perf.HARDWARE_EVENTS[name][1] for name in ("instructions", "branch_misses", "cache_misses")}
PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE = perf.PERF_EVENT_IOC_ENABLE, perf.PERF_EVENT_IOC_DISABLE


def _perf_open(config: int) -> int:
    """An fd counting hardware event ``config`` for this thread and threads it starts later
    (disabled until enabled; user space only), or -errno."""
    attr = perf.event_attr((perf.PERF_TYPE_HARDWARE, config), flags=perf.ATTR_DISABLED | perf.ATTR_INHERIT)
    try:
        return perf.perf_event_open(attr)
    except OSError as e:
        return -(e.errno or errno.EIO)


def probe_hardware() -> tuple[bool, str]:
    """Whether hardware counters work here, and why not."""
    fd = _perf_open(HW_EVENTS["instructions"])
    if fd >= 0:
        os.close(fd)
        return True, "perf_event_open hardware events work"
    code = -fd
    why = {errno.ENOENT: "no PMU driver: the kernel offers software events only",
           errno.EACCES: "not permitted (perf_event_paranoid)", errno.EPERM: "not permitted",
           errno.ENOSYS: "no perf_event_open on this platform"}.get(code, os.strerror(code))
    return False, f"perf_event_open(PERF_COUNT_HW_INSTRUCTIONS) failed with {errno.errorcode.get(code, code)}: {why}"


def _hardware_run(fn) -> dict[str, int]:
    fds = {name: _perf_open(cfg) for name, cfg in HW_EVENTS.items()}
    import fcntl
    try:
        for fd in fds.values():
            if fd >= 0:
                fcntl.ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)
        fn()
        for fd in fds.values():
            if fd >= 0:
                fcntl.ioctl(fd, PERF_EVENT_IOC_DISABLE, 0)
        return {name: int.from_bytes(os.read(fd, 8), "little") for name, fd in fds.items() if fd >= 0}
    finally:
        for fd in fds.values():
            if fd >= 0:
                os.close(fd)


# ---- the peer run, in a process of its own ------------------------------------------------------

CG_HELPER = r"""
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(const char *label) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(label); }
"""


def _peer_for(name: str, workload: str, rows: int, seed: int):
    w = WL[workload]
    case = next(c for c in w.cases(params=(CASES[workload],)))
    data = w.make(case.param, rows, seed)
    opts = Options(threads=os.cpu_count() or 1)
    peer = SPECS[name].make(opts)
    peer.setup(data)
    peer.use_data(data)
    peer.prepare(case)
    return peer, data


def worker(mode: str, peer_name: str, workload: str, sizes: list[int], seed: int) -> None:
    """Runs in its own process (under valgrind for ``callgrind``); prints one JSON line."""
    out = {}
    if mode == "callgrind":
        tmp = tempfile.mkdtemp(prefix="grizzly-cg-")
        src, lib = Path(tmp) / "cg.c", Path(tmp) / "cg.so"
        src.write_text(CG_HELPER)
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
        cg = ctypes.CDLL(str(lib))
        cg.cg_stop.argtypes = [ctypes.c_char_p]
    for n in sizes:
        peer, data = _peer_for(peer_name, workload, n, seed)
        peer.run()  # warm: compilation, caches, first-touch memory
        if mode == "callgrind":
            cg.cg_start()
            peer.run()
            cg.cg_stop(f"rows={n}".encode())
        else:
            out[str(n)] = _hardware_run(peer.run)
        peer.close()
        data.cleanup()
    print("COUNTERS " + json.dumps(out), flush=True)


def _callgrind_totals(out_dir: Path) -> dict[int, int]:
    totals = {}
    for f in out_dir.glob("cg.out*"):
        text = f.read_text(errors="replace")
        label = re.search(r"^trigger: .*rows=(\d+)", text, re.M) or re.search(r"rows=(\d+)", text)
        total = re.search(r"^totals: (\d+)", text, re.M) or re.search(r"^summary: (\d+)", text, re.M)
        if label and total:
            totals[int(label.group(1))] = int(total.group(1))
    return totals


def _measure_one(mode: str, peer: str, workload: str, sizes: list[int], seed: int) -> dict:
    cmd = [sys.executable, "-m", f"{__package__}.counters", "worker", mode, peer, workload,
           ",".join(map(str, sizes)), str(seed)]
    with tempfile.TemporaryDirectory(prefix="grizzly-cg-out-") as tmp:
        if mode == "callgrind":
            cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=no",
                   f"--callgrind-out-file={tmp}/cg.out.%p", *cmd]
        path = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path, POLARS_MAX_THREADS="1")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {TIMEOUT_S} s"}
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
            return {"error": f"exit {proc.returncode}: {tail[-800:]}"}
        if mode == "callgrind":
            totals = _callgrind_totals(Path(tmp))
            if len(totals) != len(sizes):
                return {"error": f"callgrind dumps not found (got {totals})"}
            n1, n2 = sizes
            return {"instructions": totals,
                    "instructions_per_record": (totals[n2] - totals[n1]) / (n2 - n1),
                    "instructions_per_record_at_n2": totals[n2] / n2}
        line = next((l for l in proc.stdout.splitlines() if l.startswith("COUNTERS ")), None)
        counts = json.loads(line[len("COUNTERS "):])
        n1, n2 = sizes
        per = {k: (counts[str(n2)][k] - counts[str(n1)][k]) / (n2 - n1) for k in counts[str(n2)]}
        return {"counts": counts, **{f"{k}_per_record": v for k, v in per.items()}}


def measure(opts, workloads: list[str]) -> dict:
    """Counters for ``workloads`` (of WORKLOADS) and the peers of ``opts`` that can be counted."""
    hw, why = probe_hardware()
    sizes = list(opts.counter_rows)
    peers = [p for p in PEERS if p in opts.peers]
    if hw:
        mode, note = "hardware", (f"Hardware counters (perf_event_open, user space) around one run, "
                                  f"marginal per input record between {sizes[0]:,} and {sizes[1]:,} rows.")
        cols = ["workload", "peer", "instructions / record", "branch misses / record", "cache misses / record"]
    else:
        if shutil.which("valgrind") is None:
            return {"mode": None, "hardware": why,
                    "note": f"No hardware counters ({why}) and no valgrind (apt-get install valgrind): "
                            "no per-record counters."}
        mode = "callgrind"
        note = (f"No hardware counters on this host ({why}). Instructions per input record from "
                f"`valgrind --tool=callgrind`: one run of each peer counted at {sizes[0]:,} and "
                f"{sizes[1]:,} input rows, marginal cost between the two (fixed per-run costs "
                "removed); imports, data generation, compilation and a warm-up run are not counted. "
                "polars and DuckDB run their threads serialized under valgrind.")
        cols = ["workload", "peer", "instructions / record", f"instructions / record at {sizes[1]:,} rows"]
    results, table = {}, []
    for w in workloads:
        for p in peers:
            if not SPECS[p].cls().supports(w):
                continue
            r = _measure_one(mode, p, w, sizes, opts.seed)
            results[f"{w}/{p}"] = r
            if "error" in r:
                table.append([w, p, f"error: {r['error'][:120]}", ""] + ([""] if hw else []))
            elif hw:
                table.append([w, p, *(f"{r[f'{k}_per_record']:.2f}" for k in HW_EVENTS)])
            else:
                table.append([w, p, f"{r['instructions_per_record']:.1f}",
                              f"{r['instructions_per_record_at_n2']:.1f}"])
    return {"mode": mode, "hardware": why, "note": note, "columns": cols, "table": table,
            "results": results}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        _, _, mode, peer, workload, sizes, seed = sys.argv
        worker(mode, peer, workload, [int(s) for s in sizes.split(",")], int(seed))
    else:
        print(json.dumps(measure(Options().resolve(), list(WORKLOADS)), indent=2, default=str))
