"""One owner per checkpoint directory: an OS lock, an owner record and an epoch that fences.

A job that checkpoints to a directory first takes the lock file ``LOCK`` there with
``flock(LOCK_EX | LOCK_NB)`` and holds it for its whole life. The OS releases the lock when the
process ends, however it ends, so a restart after ``kill -9`` takes over without manual steps. A
second job that finds the lock held fails at once with ``CheckpointOwnedError`` naming the owner
(pid, host, start time, epoch) from the owner record ``OWNER``.

The *epoch* counts the owners the directory has had: a new owner writes the previous record's
epoch + 1 into ``OWNER`` (a JSON record, written atomically and synced) before it restores or
writes anything. It puts its epoch into every snapshot and every output part's name, and before
each commit (an output part, a snapshot, the job's final output) ``Owner.check`` verifies that
``LOCK`` is still the file it locked and that ``OWNER`` still holds its epoch. An owner that lost
the directory (its lock file was removed and another job locked a new one; or, where the OS lock
does not reach, such as a filesystem without working locks shared between hosts, another job
simply started) fails with ``CheckpointFencedError`` instead of committing over the new owner's
checkpoints. ``LOCK`` and ``OWNER`` stay when the job finishes, so epochs only grow.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from .checkpoint_errors import CheckpointError, CheckpointFencedError, CheckpointOwnedError
from .snapshot import write_atomically

LOCK_NAME = "LOCK"
OWNER_NAME = "OWNER"
_RECORD_WAIT_S = 1.0  # how long a refused job waits for a new owner's record (written just after its lock)


@dataclass(frozen=True)
class OwnerRecord:
    pid: int
    host: str
    started_unix: float
    epoch: int

    def describe(self) -> str:
        started = datetime.fromtimestamp(self.started_unix, timezone.utc).isoformat(timespec="seconds")
        return f"pid {self.pid} on host {self.host}, started {started}, epoch {self.epoch}"


def read_record(directory: str) -> OwnerRecord | None:
    """The directory's owner record (None if it has had no owner)."""
    path = os.path.join(directory, OWNER_NAME)
    try:
        with open(path, encoding="utf-8") as f:
            return OwnerRecord(**json.load(f))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as e:  # written atomically: only damage from outside gets here
        raise CheckpointError(f"{path}: unreadable owner record ({e}); it holds the checkpoint "
                              f"directory's epoch, so it is not guessed: remove the directory to start afresh") from e


class Owner:
    """This process's ownership of a checkpoint directory (``acquire``), until ``release``."""

    def __init__(self, directory: str, fd: int, record: OwnerRecord):
        self.directory, self._fd, self.record = directory, fd, record

    @property
    def epoch(self) -> int:
        return self.record.epoch

    @classmethod
    def acquire(cls, directory: str) -> Owner:
        """Lock ``directory`` and become its next owner; ``CheckpointOwnedError`` if a running
        job holds it."""
        os.makedirs(directory, exist_ok=True)
        fd = os.open(os.path.join(directory, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CheckpointOwnedError(
                f"checkpoint directory {directory} is owned by another running job ({_describe_holder(directory)}); "
                f"one job owns a checkpoint directory at a time: wait for that job to end, or checkpoint "
                f"this job to another path") from None
        try:
            previous = read_record(directory)
            record = OwnerRecord(os.getpid(), socket.gethostname(), time.time(),
                                 (previous.epoch if previous is not None else 0) + 1)
            write_atomically(os.path.join(directory, OWNER_NAME), json.dumps(asdict(record)).encode("utf-8"))
        except BaseException:
            os.close(fd)  # releases the lock
            raise
        return cls(directory, fd, record)

    def check(self) -> None:
        """Raise ``CheckpointFencedError`` unless this owner still owns the directory: called
        before every commit."""
        if self._fd is None:
            raise CheckpointFencedError(f"checkpoint directory {self.directory}: this job released its ownership")
        lock = os.path.join(self.directory, LOCK_NAME)
        held = os.fstat(self._fd)
        try:
            on_disk = os.stat(lock)
            same_lock = (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)
        except FileNotFoundError:
            same_lock = False
        current = read_record(self.directory)
        if same_lock and current is not None and current.epoch == self.epoch:
            return
        now = f"it is now owned by {current.describe()}" if current is not None and current.epoch != self.epoch \
            else f"its lock file {lock} was removed or replaced"
        raise CheckpointFencedError(
            f"checkpoint directory {self.directory}: this job ({self.record.describe()}) no longer owns it: {now}. "
            f"It stops without committing anything more there")

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor of the lock releases it


def _describe_holder(directory: str) -> str:
    """The running owner, from its record. A job that has just taken the lock writes its record
    right after: while the record names a process of this host that is gone, read it again."""
    deadline = time.monotonic() + _RECORD_WAIT_S
    while True:
        try:
            record = read_record(directory)
        except CheckpointError as e:
            return str(e)
        if record is not None and (record.host != socket.gethostname() or process_alive(record.pid)):
            return record.describe()
        if time.monotonic() >= deadline:
            last = f"; the last owner record: {record.describe()}" if record is not None else ""
            return f"a process that has not written its owner record yet{last}"
        time.sleep(0.02)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


__all__ = ["LOCK_NAME", "OWNER_NAME", "Owner", "OwnerRecord", "process_alive", "read_record"]
