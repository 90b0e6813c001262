"""The errors of checkpoints (``checkpoint.py``) and of their ownership (``ownership.py``)."""

from __future__ import annotations


class CheckpointError(RuntimeError):
    """A job that cannot be checkpointed, or a checkpoint that cannot be restored into it."""


class CheckpointOwnedError(CheckpointError):
    """The checkpoint directory is owned by another running job (it holds the directory's lock)."""


class CheckpointFencedError(CheckpointError):
    """This job lost the ownership of its checkpoint directory (another owner took it over): it
    must not commit anything more there."""


class CheckpointCorruptError(CheckpointError):
    """A committed output part does not match the checksum its snapshot recorded."""


__all__ = ["CheckpointCorruptError", "CheckpointError", "CheckpointFencedError", "CheckpointOwnedError"]
