"""Describe the machine and software a benchmark ran on, for the report."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def load_average() -> str | None:
    """1/5/15-minute load averages: other work on a shared host skews multi-threaded peers."""
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _first_line(cmd: list[str]) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else None


def describe_host(packages: tuple[str, ...] = ("llvmlite", "pyarrow", "numpy", "polars", "duckdb",
                                               "pyspark", "grizzly-py")) -> dict:
    """CPU, cores, memory, OS, Python, compiler, Java and package versions (None: not installed)."""
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gib": _mem_total_gib(),
        "load_average_at_end (1/5/15 min)": load_average(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "gcc": _first_line(["gcc", "--version"]),
        "java": _first_line(["java", "-version"]),
        "packages": {name: _version(name) for name in packages},
    }


def process_memory_gib() -> dict[str, float]:
    """This process's resident set size now and at its peak (Linux; else empty). Run per peer
    in a forked child, that is the peer's own peak, input data included; the processes it
    starts (Spark's JVM) are not counted."""
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key = "rss_gib" if line.startswith("VmRSS") else "peak_rss_gib"
                    out[key] = round(int(line.split()[1]) / 2**20, 2)
    except OSError:
        pass
    return out
