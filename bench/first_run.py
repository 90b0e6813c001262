"""The first YSB job in a new process against a second, warm one in the same process.

    python -m bench.first_run --rows 60000000 --repeat 5

Generates the YSB data once into an Arrow IPC file; then, ``--repeat`` rounds, each mode once a
round (interleaved), a fresh Python process per run reads the table into memory, imports
grizzly_py and runs the YSB job twice (``first`` and ``warm``: the same process, its code
compiled). Modes, by what the on-disk cache (``GRIZZLY_CACHE_DIR``) holds when the process
starts:

- ``cold``: nothing (a new, empty folder per run);
- ``disk code``: the machine code of every variant an earlier process compiled, but no record
  of what its profile chose (the ``*.variant.json`` files removed before each run);
- ``disk code + profile``: both, as an earlier process left them.

Python's bytecode is cached in a folder of its own (``PYTHONPYCACHEPREFIX``), filled by the
priming run, as an installed package's would be. ``--import-pandas``: the process imports
pandas before it times anything (pyarrow imports pandas, when installed, at the first conversion
between Arrow and numpy or Python objects; the engine's paths do not: ``arrow_numpy``). Prints the
medians as a Markdown table, wall and CPU time (every thread's) of each job: on a shared host the
load inflates the wall figures. ``--baseline-tree PATH`` runs another checkout's grizzly_py
(``git worktree add /tmp/before <rev>``) too, alternating with this one run by run, one row per
tree and mode.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = ("cold", "disk code", "disk code + profile")


def child(data: str, import_pandas: bool) -> None:
    """One fresh process: read the table, import grizzly_py, run YSB twice; print JSON."""
    import pyarrow as pa
    if import_pandas:
        importlib.import_module("pandas")  # its import is what is taken out of the timing
    with pa.OSFile(data, "rb") as f:
        table = pa.ipc.open_file(f).read_all()
    start = time.perf_counter()
    import grizzly_py as gz
    from grizzly_py.workloads.ysb import WINDOW_MS, ysb_query
    out = {"import_s": time.perf_counter() - start, "pandas_before_job": "pandas" in sys.modules}
    for run in ("first", "warm"):
        start, cpu = time.perf_counter(), time.process_time()
        env = gz.StreamEnvironment(parallelism=1)
        ysb_query(env, table, WINDOW_MS).collect("out")
        result = env.execute()
        out[f"{run}_s"] = time.perf_counter() - start
        out[f"{run}_cpu_s"] = time.process_time() - cpu  # every thread's, the background compiles too
        pipeline = result.metrics["queries"][0]["pipelines"][0]
        history = pipeline.get("variant_history", [])
        optimized = next((h for h in history if h["stage"] == "optimized"), None)
        out[f"{run}_job_s"] = result.metrics["seconds"]
        out[f"{run}_codegen_ms"] = pipeline.get("codegen_ms")
        out[f"{run}_compile_ms"] = pipeline.get("compile_ms")
        out[f"{run}_stages"] = [h["stage"] for h in history]
        out[f"{run}_history"] = [(h["stage"], h["at_s"], h["at_record"]) for h in history]
        out[f"{run}_optimized_at_s"] = optimized["at_s"] if optimized else None
        out[f"{run}_optimized_at_record"] = optimized["at_record"] if optimized else None
    out["rows"] = table.num_rows
    print(json.dumps(out))


ROOT = Path(__file__).resolve().parent.parent


def run_child(data: Path, cache: Path, pycache: Path, import_pandas: bool, tree: Path = ROOT) -> dict:
    """One fresh process running ``tree``'s grizzly_py (this file's ``child``, whichever tree)."""
    env = {**os.environ, "GRIZZLY_CACHE_DIR": str(cache), "PYTHONPYCACHEPREFIX": str(pycache),
           "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("GRIZZLY_CODE_CACHE", None)
    env.pop("GRIZZLY_LEARNED_VARIANTS", None)  # the modes are what the cache holds: records on
    argv = ["first_run", "--child", str(data)] + (["--import-pandas"] if import_pandas else [])
    run_this_file = (f"import runpy, sys; sys.argv = {argv!r}; "
                     f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", run_this_file], env=env,
                          capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(done.stdout.strip().splitlines()[-1])


def forget_profiles(cache: Path) -> None:
    for p in (cache / "code").glob("*.variant.json"):
        p.unlink()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="YSB: the first job in a new process vs a warm one.")
    p.add_argument("--rows", type=int, default=60_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--import-pandas", action="store_true", help="import pandas before timing")
    p.add_argument("--baseline-tree", metavar="PATH",
                   help="also run another checkout's grizzly_py (e.g. a git worktree of main), alternating "
                        "with this one run by run; one table row per tree and mode")
    p.add_argument("--child", metavar="DATA", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.import_pandas)
        return 0
    import pyarrow as pa
    from grizzly_py.workloads.ysb import generate_ysb
    from .host import load_average
    work = Path(tempfile.mkdtemp(prefix="grizzly-first-run-"))
    try:
        data, pycache = work / "ysb.arrow", work / "pycache"
        table = generate_ysb(args.rows)
        with pa.OSFile(str(data), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        del table
        trees = {"": ROOT}
        if args.baseline_tree:
            trees = {"baseline: ": Path(args.baseline_tree).resolve(), "this tree: ": ROOT}
        primed = {(label, mode): work / f"{i}-{mode.replace(' ', '-')}"
                  for i, label in enumerate(trees) for mode in ("disk code", "disk code + profile")}
        for (label, _), cache in primed.items():
            run_child(data, cache, pycache, args.import_pandas, trees[label])
        load_start = load_average()
        runs: dict[tuple[str, str], list[dict]] = {(label, m): [] for label in trees for m in MODES}
        for r in range(args.repeat):
            for mode in MODES:
                for i, (label, tree) in enumerate(trees.items()):
                    if mode == "cold":
                        cache = work / f"cold-{i}-{r}"
                    else:
                        cache = primed[label, mode]
                        if mode == "disk code":
                            forget_profiles(cache)
                    runs[label, mode].append(run_child(data, cache, pycache, args.import_pandas, tree))
        print(f"YSB, {args.rows:,} rows, parallelism 1, median of {args.repeat} fresh processes per mode, "
              f"pandas {'imported before' if args.import_pandas else 'not imported'} "
              f"(interleaved{', trees alternating' if len(trees) > 1 else ''}); load average {load_start} at the "
              f"start, {load_average()} at the end\n")
        if args.baseline_tree:
            print(f"baseline: {trees['baseline: ']}\n")
        print("| cache at start | import s | first run s | warm run s | first / warm Mrec/s | first ÷ warm "
              "| first: CPU s | warm: CPU s | first: codegen ms | compile ms | optimized from (s, record) "
              "| first run's stages |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for mode in MODES:
            for label in trees:
                rs = runs[label, mode]

                def med(k):
                    vals = [x[k] for x in rs if x.get(k) is not None]
                    return statistics.median(vals) if vals else None
                first, warm = med("first_s"), med("warm_s")
                at_s, at_rec = med("first_optimized_at_s"), med("first_optimized_at_record")
                stages = " > ".join(rs[len(rs) // 2]["first_stages"])
                opt = "never" if at_s is None else f"{at_s:.3f} s, {at_rec / 1e6:.1f}M"
                cpu = [med(f"{run}_cpu_s") for run in ("first", "warm")]
                cpu_text = " | ".join("" if c is None else f"{c:.3f}" for c in cpu)
                print(f"| {label}{mode} | {med('import_s'):.3f} | {first:.3f} | {warm:.3f} | "
                      f"{args.rows / first / 1e6:.0f} / {args.rows / warm / 1e6:.0f} | {warm / first:.2f}x | "
                      f"{cpu_text} | {med('first_codegen_ms'):.0f} | {med('first_compile_ms'):.0f} | {opt} | {stages} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
