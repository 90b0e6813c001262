"""``perf_event_open`` through ctypes: the attribute struct, the event numbers, and a counter group
for the calling thread that one ``read()`` reads whole.

This module owns the one ctypes definition of ``struct perf_event_attr`` in the project
(``bench/counters.py`` imports it). It never raises at import: where the syscall is missing
(not Linux, an unknown architecture), :func:`perf_event_open` raises ``OSError(ENOSYS)``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
import threading
import weakref

# linux/perf_event.h
PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1

PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_COUNT_HW_CACHE_MISSES = 3
PERF_COUNT_HW_BRANCH_MISSES = 5

PERF_COUNT_SW_TASK_CLOCK = 1
PERF_COUNT_SW_PAGE_FAULTS = 2
PERF_COUNT_SW_CONTEXT_SWITCHES = 3

PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
PERF_FORMAT_GROUP = 1 << 3

# bits of perf_event_attr.flags (the C bitfield after read_format)
ATTR_DISABLED = 1 << 0
ATTR_INHERIT = 1 << 1
ATTR_EXCLUDE_KERNEL = 1 << 5
ATTR_EXCLUDE_HV = 1 << 6

PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE = 0x2400, 0x2401

SYSCALL_NR = {"x86_64": 298, "aarch64": 241}  # __NR_perf_event_open

# event name -> (type, config), the names grizzly-py reports
HARDWARE_EVENTS = {
    "cycles": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    "instructions": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
    "branch_misses": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES),
    "cache_misses": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES),
}
SOFTWARE_EVENTS = {
    "task_clock": (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK),  # ns the thread ran on a CPU
    "page_faults": (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS),
}


class PerfEventAttr(ctypes.Structure):
    """``struct perf_event_attr`` up to ``config1`` (``PERF_ATTR_SIZE_VER0``, 64 bytes); the
    kernel accepts this size and zero-fills the rest."""

    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64),
                ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32),
                ("config1", ctypes.c_uint64)]


_libc = None


def _syscall(nr: int, attr: PerfEventAttr, pid: int, cpu: int, group_fd: int, flags: int) -> int:
    """The raw syscall: an fd, or -errno."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fd = _libc.syscall(ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_int(pid), ctypes.c_int(cpu),
                       ctypes.c_int(group_fd), ctypes.c_ulong(flags))
    return fd if fd >= 0 else -ctypes.get_errno()


def perf_event_open(attr: PerfEventAttr, pid: int = 0, cpu: int = -1, group_fd: int = -1,
                    flags: int = PERF_FLAG_FD_CLOEXEC) -> int:
    """An fd for ``attr`` (``pid=0, cpu=-1``: the calling thread on any CPU); ``OSError`` with the
    errno when the kernel refuses (ENOENT: no such event here, e.g. no PMU; EACCES/EPERM:
    ``perf_event_paranoid`` or a seccomp filter; ENOSYS: no syscall)."""
    nr = SYSCALL_NR.get(platform.machine())
    if nr is None or not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, f"perf_event_open: not available on {platform.system()} "
                                    f"{platform.machine()}")
    fd = _syscall(nr, attr, pid, cpu, group_fd, flags)
    if fd < 0:
        raise OSError(-fd, os.strerror(-fd))
    return fd


def event_attr(kind: tuple[int, int], read_format: int = 0, flags: int = 0) -> PerfEventAttr:
    """The attribute for one (type, config) event, counting user space only."""
    return PerfEventAttr(type=kind[0], size=ctypes.sizeof(PerfEventAttr), config=kind[1],
                         read_format=read_format, flags=flags | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV)


class PerfGroup:
    """The events of one source, opened as one group for the calling thread (enabled from the
    start, user space only); :meth:`read` is a single ``read()`` of the leader that returns every
    member, scaled for multiplexing."""

    _READ_FORMAT = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING

    def __init__(self, events: dict[str, tuple[int, int]]):
        self.names = tuple(events)
        self.fds: list[int] = []
        # the fds are closed once: by close(), or when the group is dropped (its thread ended)
        self._lock = threading.Lock()
        weakref.finalize(self, _close_fds, self.fds, self._lock)
        for kind in events.values():
            group_fd = self.fds[0] if self.fds else -1
            try:
                self.fds.append(perf_event_open(event_attr(kind, self._READ_FORMAT), group_fd=group_fd))
            except OSError:
                self.close()
                raise
        # {u64 nr; u64 time_enabled; u64 time_running; u64 values[nr]}
        layout = struct.Struct(f"={3 + len(self.names)}Q")
        self._unpack, self._size = layout.unpack, layout.size

    def read(self) -> tuple[float, ...]:
        """Each event's count since the group was opened, scaled up by time_enabled/time_running
        where the kernel multiplexed the group; ``OSError(EBADF)`` once closed. The lock keeps a
        concurrent close() from handing the fd number to another file between check and read."""
        with self._lock:
            if not self.fds:
                raise OSError(errno.EBADF, "perf counter group closed")
            raw = os.read(self.fds[0], self._size)
        values = self._unpack(raw)  # (nr, time_enabled, time_running, *counts)
        if values[2] != values[1] and values[2]:
            return tuple(v * values[1] / values[2] for v in values[3:])
        return values[3:]

    def close(self) -> None:
        _close_fds(self.fds, self._lock)


def _close_fds(fds: list[int], lock: threading.Lock) -> None:
    with lock:
        for fd in reversed(fds):
            try:
                os.close(fd)
            except OSError:
                pass
        fds.clear()


def describe_errno(code: int) -> str:
    """Why perf_event_open failed, in words a report can show."""
    why = {errno.ENOENT: "no PMU: the kernel offers software events only",
           errno.EOPNOTSUPP: "event not supported here",
           errno.EACCES: "not permitted (perf_event_paranoid or a seccomp filter)",
           errno.EPERM: "not permitted (perf_event_paranoid or a seccomp filter)",
           errno.ENOSYS: "no perf_event_open on this platform"}.get(code, os.strerror(code))
    return f"{errno.errorcode.get(code, code)}: {why}"
