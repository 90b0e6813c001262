"""The memory a stateless pipeline's output columns live in: ``OutputArena`` and its chunk pool.

What this module owns: handing out pieces of large chunks for the columns a projection returns
(the computed columns its kernel writes, the pass-through columns gathered by the selection
vector). A fresh numpy buffer per column and batch costs its first touch a page fault per 4 KiB
(~3.4 us on the bench host: most of the time of a 50% selection or of Q1's computed price), and
whether glibc hands back already-mapped heap memory instead flips from job to job. An arena's
chunks double from ``SMALLEST_CHUNK`` to ``LARGEST_CHUNK``; those of 2 MiB or more start at a
2 MiB boundary and are advised to the kernel as huge pages (``madvise(MADV_HUGEPAGE)``): a
few faults per column and job instead of thousands.

An arena only moves forward: a piece once handed out is never handed out again by it. A chunk
the arena has left (full, or the arena is gone) goes to the process's ``ChunkPool``, which hands
it to a later arena only once nothing else references it: every array, Arrow buffer or table cut
from a chunk holds a reference to it (``sys.getrefcount``), so results still alive are never
written over, while the memory of results already dropped is reused without new page faults.
The pool holds at most ``POOL_BYTES`` of chunks (the oldest go first).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections import deque

import numpy as np

SMALLEST_CHUNK = 256 << 10
LARGEST_CHUNK = 16 << 20
POOL_BYTES = 128 << 20
_HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = 14
_ALIGN = 64  # every piece starts on a cache line


class ChunkPool:
    """Chunks (owning uint8 arrays) arenas have left, by size; one is handed out again only when
    no array cut from it is alive."""

    def __init__(self, limit: int = POOL_BYTES) -> None:
        self.limit = limit
        self._chunks: deque[np.ndarray] = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, size: int) -> np.ndarray | None:
        """An idle chunk of exactly ``size`` bytes (as allocated), or None."""
        with self._lock:
            for i in range(len(self._chunks)):
                # references: the deque's and getrefcount's argument: nothing cut from it is alive
                if len(self._chunks[i]) == size and sys.getrefcount(self._chunks[i]) == 2:
                    chunk = self._chunks[i]
                    del self._chunks[i]
                    self._bytes -= size
                    return chunk
        return None

    def put(self, chunk: np.ndarray) -> None:
        """``chunk`` left by its arena (arrays cut from it may still be alive)."""
        with self._lock:
            self._chunks.append(chunk)
            self._bytes += len(chunk)
            while self._bytes > self.limit:
                self._bytes -= len(self._chunks.popleft())

    def clear(self) -> None:
        with self._lock:
            self._chunks.clear()
            self._bytes = 0


POOL = ChunkPool()


class OutputArena:
    """Consecutive pieces of growing chunks for one output column of one worker (workers run
    at once; a piece's bytes are written by one native call at a time)."""

    def __init__(self, pool: ChunkPool = POOL) -> None:
        self.pool = pool
        self._chunk: np.ndarray | None = None  # the owning array: pieces are views of it
        self._used = self._end = 0
        self._next = SMALLEST_CHUNK

    def reserve(self, nbytes: int) -> np.ndarray:
        """``nbytes`` bytes (uint8) at the arena's cursor, not yet handed out: the kernel may
        write them; ``commit`` hands out what the result keeps."""
        if self._chunk is None or self._end - self._used < nbytes:
            self._leave_chunk()
            self._chunk, self._used, self._end = self._new_chunk(nbytes)
        return self._chunk[self._used:self._used + nbytes]

    def commit(self, nbytes: int) -> None:
        """Hand out the first ``nbytes`` of the last reservation: never reserved again."""
        self._used = min(self._end, self._used + -(-nbytes // _ALIGN) * _ALIGN)

    def take(self, nbytes: int) -> np.ndarray:
        """``nbytes`` bytes handed out at once (``reserve`` then ``commit``)."""
        piece = self.reserve(nbytes)
        self.commit(nbytes)
        return piece

    def __del__(self) -> None:
        self._leave_chunk()

    def _leave_chunk(self) -> None:
        if self._chunk is not None and len(self._chunk) <= LARGEST_CHUNK + _HUGE_PAGE:  # (larger: one-off)
            self.pool.put(self._chunk)
        self._chunk = None

    def _new_chunk(self, nbytes: int) -> tuple[np.ndarray, int, int]:
        """(owning array, first usable byte, end) of at least ``nbytes``: sizes are powers of two
        (equal sizes are pooled), at least eight pieces of this size (a stream of equal
        batches soon reaches chunks in huge pages)."""
        size = 1 << (max(self._next, 8 * nbytes) - 1).bit_length()
        size = max(nbytes, min(size, LARGEST_CHUNK))
        self._next = min(2 * size, LARGEST_CHUNK)
        align = _HUGE_PAGE if size >= _HUGE_PAGE else _ALIGN
        chunk, fresh = self.pool.get(size + align), False
        if chunk is None:
            chunk, fresh = np.empty(size + align, dtype=np.uint8), True
        start = -chunk.ctypes.data % align
        if fresh and align == _HUGE_PAGE:
            _advise_huge_pages(chunk.ctypes.data + start, size)
        return chunk, start, start + size


def _advise_huge_pages(address: int, size: int) -> None:
    """Ask for transparent huge pages over ``[address, address + size)`` (2 MiB aligned); where
    the system has none, or madvise fails, the memory stays in small pages."""
    if _madvise is not None:
        _madvise(ctypes.c_void_p(address), ctypes.c_size_t(size), _MADV_HUGEPAGE)


try:
    _madvise = ctypes.CDLL(None, use_errno=True).madvise if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _madvise = None


__all__ = ["ChunkPool", "LARGEST_CHUNK", "OutputArena", "POOL", "POOL_BYTES", "SMALLEST_CHUNK"]
