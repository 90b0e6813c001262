"""The non-blocking reordering buffer of Prasaad et al. (2018, section 3, figure 4).

Workers finish tasks in any order; each task's output carries the serial number of its task, and
the buffer passes outputs downstream strictly in serial order. ``send`` never waits for another
worker: it puts the output in its slot (``serial mod capacity``) and then tries to become the
one worker that drains the buffer (a try-lock stands for the paper's ``atomic_flag``). The
drainer sends outputs while the next serial number's slot is full; after giving the flag up it
looks once more, so an output added while it was draining is never stranded. A task whose
serial number is a full buffer ahead of the next one to send cannot be added yet: ``send``
returns False and the caller retries later (back-pressure; the engine bounds the tasks in
flight to the capacity, so this does not happen there).

The downstream callable runs inside the drain, one output at a time and in order, so it needs
no locking of its own. ``waits`` counts sends that found the flag taken (another worker was
draining), ``rejected`` the sends that were out of range.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

_EMPTY = object()


class ReorderBuffer:
    def __init__(self, capacity: int, downstream: Callable[[Any], None], first: int = 0):
        if capacity < 1:
            raise ValueError("a reorder buffer needs at least one slot")
        self.capacity = capacity
        self.downstream = downstream
        self.next = first                      # serial number of the next output to send
        self._slots: list[Any] = [_EMPTY] * capacity
        self._flag = threading.Lock()          # held by the worker that drains
        self._local = threading.local()
        self.waits = 0
        self.rejected = 0
        self.error: BaseException | None = None  # raised by downstream; later sends re-raise it

    def send(self, serial: int, output: Any) -> bool:
        """Add the output of task ``serial`` and pass on whatever is now in order. False when
        ``serial`` is not within ``capacity`` of the next serial number to send."""
        added = self._try_add(serial, output)
        self._send_pending()
        return added

    def _try_add(self, serial: int, output: Any) -> bool:
        n = self.next
        if not (n <= serial < n + self.capacity):
            self.rejected += 1
            return False
        self._slots[serial % self.capacity] = output
        return True

    def last_send_waited(self) -> bool:
        """Whether this thread's last ``send`` found another worker draining."""
        return getattr(self._local, "waited", False)

    def _send_pending(self) -> None:
        self._local.waited = False
        while True:
            if not self._flag.acquire(blocking=False):
                self.waits += 1
                self._local.waited = True
                return  # the worker holding the flag sends it (it looks again before leaving)
            try:
                while True:
                    i = self.next % self.capacity
                    output = self._slots[i]
                    if output is _EMPTY:
                        break
                    self._slots[i] = _EMPTY
                    self.next += 1
                    if self.error is None:
                        try:
                            self.downstream(output)
                        except BaseException as e:  # keep draining (nothing may block); report it
                            self.error = e
            finally:
                self._flag.release()
            # re-check: an output added after we saw an empty slot and before we let go
            if self._slots[self.next % self.capacity] is _EMPTY:
                break
        if self.error is not None:
            raise self.error

    @property
    def pending(self) -> int:
        """Outputs added but not sent yet (they wait for an earlier serial number)."""
        return sum(1 for o in self._slots if o is not _EMPTY)
