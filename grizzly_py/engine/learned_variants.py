"""What an earlier job's profile chose for a pipeline, kept on disk next to its machine code.

A process's first job of a pipeline otherwise runs the generic variant, profiles with the
instrumented one and only then builds the optimized one: in a new process each of those is
generated (and loaded or compiled) for the first time, which keeps a short job in the slower
variants for much of its length (``docs/benchmarks.md``, "First run in a new process"). Here,
when a job's pipeline enters an optimized variant, that variant's options are written to
``code_cache.folder()`` as ``<plan>.variant.json``; the first job of the same pipeline in a
later process starts with them (``VariantController``'s warm start), guarded as always: a key
outside the dense range deoptimizes, and a deoptimization deletes the record, so the next
process profiles afresh.

``<plan>`` is a digest of the pipeline's generic code (its schema, filters, window, keys and
aggregates are all in it) and of what the machine code depends on (``jit``'s disk context).
Only a process's first job of a pipeline reads the record: later jobs find every variant
compiled in the process, and their own profile costs a few milliseconds. The folder's safety
rules are the code cache's (a file is read only from a folder the user owns and nobody else
may write to); an unreadable or malformed record is ignored. ``GRIZZLY_LEARNED_VARIANTS=off``
turns the records off (the code cache stays).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading

from .. import code_cache
from ..codegen.module import CodegenOptions
from ..jit import disk_context

FORMAT = 1
_SUFFIX = ".variant.json"
_seen: set[str] = set()   # plans whose record this process has read (or found missing)
_on_disk: dict[tuple, CodegenOptions] = {}  # (folder, plan) -> its record's options, as this process knows
_seen_lock = threading.Lock()


class LearnedVariant:
    """The on-disk record of one pipeline's optimized variant (see the module docstring)."""

    def __init__(self, plan: str):
        self.plan = plan

    @classmethod
    def of(cls, generic_kernel_ir: str) -> "LearnedVariant | None":
        """The record of the pipeline whose generic variant's first kernel is
        ``generic_kernel_ir``; None when the code cache is off, or these records are
        (``GRIZZLY_LEARNED_VARIANTS=off``)."""
        if code_cache.folder() is None or os.environ.get("GRIZZLY_LEARNED_VARIANTS", "").lower() == "off":
            return None
        h = hashlib.sha256(f"grizzly-py learned variant {FORMAT}\n{disk_context()}\n".encode())
        h.update(generic_kernel_ir.encode())
        return cls(h.hexdigest())

    def recall(self) -> CodegenOptions | None:
        """The options an earlier job ended with, once per process (None: none, already read,
        or a record that does not parse)."""
        with _seen_lock:
            if self.plan in _seen:
                return None
            _seen.add(self.plan)
        where = code_cache.folder()
        try:
            record = json.loads((where / f"{self.plan}{_SUFFIX}").read_text())
            if record.get("format") != FORMAT:
                return None
            fields = {k: tuple(v) if isinstance(v, list) else v for k, v in record["options"].items()}
            options = CodegenOptions(**fields)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if options.variant != "optimized":
            return None
        with _seen_lock:
            _on_disk[(where, self.plan)] = options
        return options

    def remember(self, options: CodegenOptions) -> None:
        """Record ``options`` (written to a temporary file and renamed: a reader in another
        process sees the whole record or none), unless this process read or wrote that record
        already: every job of a pipeline enters its optimized variant, and a file written per
        job is a share of a short job's time."""
        where = code_cache.folder()
        with _seen_lock:
            if where is None or _on_disk.get((where, self.plan)) == options:
                return
            _on_disk[(where, self.plan)] = options
        text = json.dumps({"format": FORMAT, "options": dataclasses.asdict(options)})
        try:
            fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=_SUFFIX)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, where / f"{self.plan}{_SUFFIX}")
        except OSError:
            with _seen_lock:
                _on_disk.pop((where, self.plan), None)  # not written: a later job tries again

    def forget(self) -> None:
        """Delete the record (its variant deoptimized: the next process profiles afresh)."""
        where = code_cache.folder()
        with _seen_lock:
            _on_disk.pop((where, self.plan), None)
        if where is None:
            return
        try:
            (where / f"{self.plan}{_SUFFIX}").unlink()
        except OSError:
            pass
