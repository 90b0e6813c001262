"""PAPI through ctypes: find ``libpapi``, initialise it once for threads, and give each thread an
event set that :meth:`PapiEventSet.read` reads with one ``PAPI_read``.

Nothing here runs at import. :func:`find_papi` only looks the library up; :class:`PapiLibrary`
loads and initialises it and raises :class:`PapiError` (with PAPI's own message) when it cannot.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os
import re
import threading
import weakref

PAPI_OK = 0
PAPI_NULL = -1
PAPI_EINVAL = -1

# our event name -> PAPI event names to try, first that the host accepts wins
HARDWARE_EVENTS = {
    "cycles": ("PAPI_TOT_CYC", "perf::CYCLES"),
    "instructions": ("PAPI_TOT_INS", "perf::INSTRUCTIONS"),
    "branch_misses": ("PAPI_BR_MSP", "perf::BRANCH-MISSES"),
    "cache_misses": ("PAPI_L3_TCM", "PAPI_L2_TCM", "perf::CACHE-MISSES"),
}


class PapiError(RuntimeError):
    """PAPI could not be loaded, initialised, or did not accept an event."""


def find_papi() -> str | None:
    """The libpapi to load: ``$GRIZZLY_PAPI_LIBRARY`` if set, else what the linker finds."""
    return os.environ.get("GRIZZLY_PAPI_LIBRARY") or _linker_papi()


@functools.cache
def _linker_papi() -> str | None:
    """The libpapi the dynamic linker would load, once per process: a ``libpapi.so*`` file in
    ``$LD_LIBRARY_PATH``, else a path ldconfig cached in ``/etc/ld.so.cache``, read directly
    (under a millisecond). ``ctypes.util.find_library`` reads the same cache by running
    ``ldconfig -p`` and, where PAPI is absent, gcc and ld as well: 10-60 ms of every new
    process's first job; it is the fallback where the host has no such cache."""
    for folder in filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)):
        found = sorted(glob.glob(os.path.join(glob.escape(folder), "libpapi.so*")))
        if found:
            return found[0]
    try:
        with open(_LD_SO_CACHE, "rb") as f:
            names = _CACHED_PAPI.findall(f.read())
    except OSError:
        return ctypes.util.find_library("papi")
    paths = sorted({n.decode(errors="replace") for n in names}, key=len)
    return next((p for p in paths if os.path.exists(p)), None)


_LD_SO_CACHE = "/etc/ld.so.cache"
_CACHED_PAPI = re.compile(rb"\x00(/[^\x00]*/libpapi\.so[0-9.]*)\x00")  # a path in the cache's strings


def _versions():
    """``PAPI_VER_CURRENT`` candidates, newest first: PAPI_library_init wants the exact
    major.minor the library was built as, and a ctypes caller cannot read the header."""
    for major, minors in ((7, range(4, -1, -1)), (6, (0,)), (5, range(7, -1, -1))):
        for minor in minors:
            yield (major << 24) | (minor << 16)


class PapiLibrary:
    """One loaded, initialised libpapi (process-wide: PAPI itself is)."""

    _loaded: dict[str, "PapiLibrary"] = {}
    _load_lock = threading.Lock()

    @classmethod
    def load(cls, path: str) -> "PapiLibrary":
        with cls._load_lock:
            if path not in cls._loaded:
                cls._loaded[path] = cls(path)
            return cls._loaded[path]

    def __init__(self, path: str):
        self.path = path
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise PapiError(f"cannot load {path}: {e}") from None
        lib.PAPI_strerror.restype = ctypes.c_char_p
        lib.PAPI_read.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_longlong)]
        self.lib = lib
        if lib.PAPI_is_initialized() == 0:
            for version in _versions():
                got = lib.PAPI_library_init(ctypes.c_int(version))
                if got == version:
                    break
                if got != PAPI_EINVAL:  # the right version, but initialisation itself failed
                    raise PapiError(f"PAPI_library_init: {self.strerror(got)}")
            else:
                raise PapiError(f"PAPI_library_init accepted no known version ({path})")
            libc = ctypes.CDLL(None)
            pthread_self = ctypes.cast(libc.pthread_self, ctypes.c_void_p)
            self._check(lib.PAPI_thread_init(pthread_self), "PAPI_thread_init")
        self.version = self._version_string()

    def _version_string(self) -> str:
        # PAPI_get_opt(PAPI_LIB_VERSION=21, NULL) returns the version number
        v = self.lib.PAPI_get_opt(ctypes.c_int(21), None)
        return f"{(v >> 24) & 0xff}.{(v >> 16) & 0xff}" if v > 0 else "?"

    def strerror(self, code: int) -> str:
        text = self.lib.PAPI_strerror(ctypes.c_int(code))
        return f"{text.decode(errors='replace') if text else 'error'} ({code})"

    def _check(self, code: int, what: str) -> None:
        if code != PAPI_OK:
            raise PapiError(f"{what}: {self.strerror(code)}")

    def event_set(self, events: dict[str, tuple[str, ...]]) -> "PapiEventSet":
        return PapiEventSet(self, events)


class PapiEventSet:
    """The calling thread's running event set; ``read`` gives the counts since it started."""

    def __init__(self, papi: PapiLibrary, events: dict[str, tuple[str, ...]]):
        self.papi = papi
        lib = papi.lib
        handle = ctypes.c_int(PAPI_NULL)
        papi._check(lib.PAPI_create_eventset(ctypes.byref(handle)), "PAPI_create_eventset")
        self.handle = handle
        self.names = tuple(events)
        self.papi_names: list[str] = []
        self._values = (ctypes.c_longlong * len(events))()
        self._lock = threading.Lock()
        self._open = [True]
        weakref.finalize(self, _destroy, lib, handle, len(events), self._open, self._lock)
        try:
            for name, candidates in events.items():
                errors = []
                for candidate in candidates:
                    code = lib.PAPI_add_named_event(handle, candidate.encode())
                    if code == PAPI_OK:
                        self.papi_names.append(candidate)
                        break
                    errors.append(f"{candidate}: {papi.strerror(code)}")
                else:
                    raise PapiError(f"no PAPI event for {name} ({'; '.join(errors)})")
            papi._check(lib.PAPI_start(handle), "PAPI_start")
        except PapiError:
            self.close()
            raise

    def read(self) -> tuple[int, ...]:
        with self._lock:
            if not self._open[0]:
                raise OSError("PAPI event set closed")
            code = self.papi.lib.PAPI_read(self.handle, self._values)
        if code != PAPI_OK:
            raise OSError(f"PAPI_read: {self.papi.strerror(code)}")
        return tuple(self._values)

    def close(self) -> None:
        _destroy(self.papi.lib, self.handle, len(self.names), self._open, self._lock)


def _destroy(lib, handle, n: int, is_open: list[bool], lock: threading.Lock) -> None:
    """Stop and free an event set (best effort: PAPI refuses some calls from another thread)."""
    with lock:
        if not is_open[0]:
            return
        is_open[0] = False
        values = (ctypes.c_longlong * max(n, 1))()
        lib.PAPI_stop(handle, values)
        lib.PAPI_cleanup_eventset(handle)
        lib.PAPI_destroy_eventset(ctypes.byref(handle))
