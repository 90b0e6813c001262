"""What earlier jobs' profiles chose for a pipeline: remembered by the process, and kept on disk
next to its machine code for new processes.

A job's pipeline otherwise runs the generic variant, profiles with the instrumented one and only
then builds the optimized one: over the first few hundred thousand records the slower variants
run (on a 1M-key window, a hash table), and in a new process each variant is generated (and
loaded or compiled) for the first time besides (``docs/benchmarks.md``, "First run in a new
process" and "Skew and selectivity"). Here, whenever a pipeline enters an optimized variant, its
options (and the share of records the job's filters had kept when its profile chose them) are
remembered

- by the process, per plan: the next job of the same plan in the process, an embedded job or
  a Spark task in a worker process, starts in that variant (``VariantController``'s warm
  start); the last job to enter or leave a variant decides, and jobs that run at once share the
  memory under a lock;
- on disk, in ``code_cache.folder()`` as ``<plan>.variant.json``: a new process's first job of
  the plan starts with it.

Either start is guarded as always: a key outside the dense range deoptimizes, and so does a
share of kept records far from the remembered one (the controller's warm check); a
deoptimization forgets both, so the next job (and the next process) profiles afresh; leaving the
variant to re-profile (the counters saw a change) forgets the process's memory.

``<plan>`` is a digest of the pipeline's generic code (its schema, filters, window, keys and
aggregates are all in it) and of what the machine code depends on (``jit``'s disk context). A
process reads a plan's record once: later jobs find the process's memory. The folder's safety
rules are the code cache's (a file is read only from a folder the user owns and nobody else may
write to); an unreadable or malformed record is ignored. ``GRIZZLY_LEARNED_VARIANTS=off`` turns
the records off (the code cache and the process's memory stay);
``AdaptiveSettings(warm_start=False)`` starts a job without either (every job profiles afresh).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass

from .. import code_cache
from ..codegen.module import CodegenOptions
from ..jit import disk_context

FORMAT = 1
_SUFFIX = ".variant.json"
MEMORY_LIMIT = 256   # plans the process remembers (least recently entered first out)
_lock = threading.Lock()
_memory: OrderedDict[str, "Learned"] = OrderedDict()  # plan -> what its last job entered
_seen: set[str] = set()   # plans whose record this process has read (or found missing)
_on_disk: dict[tuple, "Learned"] = {}  # (folder, plan) -> its record, as this process knows


@dataclass(frozen=True)
class Learned:
    """An optimized variant a job entered: its options, the share of the job's records its
    filters had kept when the profile chose it (None: unknown, or no filter), and where it was
    found."""

    options: CodegenOptions
    kept_share: float | None = None
    source: str = "memory"   # "memory": an earlier job in this process; "disk": a record


class LearnedVariant:
    """One plan's memory and record (see the module docstring)."""

    def __init__(self, plan: str):
        self.plan = plan

    @classmethod
    def of(cls, generic_kernel_ir: str) -> "LearnedVariant":
        """The memory of the pipeline whose generic variant's first kernel is
        ``generic_kernel_ir``."""
        h = hashlib.sha256(f"grizzly-py learned variant {FORMAT}\n{disk_context()}\n".encode())
        h.update(generic_kernel_ir.encode())
        return cls(h.hexdigest())

    @staticmethod
    def _folder():
        """The records' folder; None when the code cache is off, or these records are
        (``GRIZZLY_LEARNED_VARIANTS=off``)."""
        if os.environ.get("GRIZZLY_LEARNED_VARIANTS", "").lower() == "off":
            return None
        return code_cache.folder()

    def recall(self) -> Learned | None:
        """What the last job of this plan in the process entered, else (once per process) the
        record on disk (None: neither, or a record that does not parse)."""
        with _lock:
            known = _memory.get(self.plan)
            if known is not None:
                return known
            where = self._folder()
            if where is None or self.plan in _seen:
                return None
            _seen.add(self.plan)
        try:
            record = json.loads((where / f"{self.plan}{_SUFFIX}").read_text())
            if record.get("format") != FORMAT:
                return None
            fields = {k: tuple(v) if isinstance(v, list) else v for k, v in record["options"].items()}
            learned = Learned(CodegenOptions(**fields), _share(record.get("kept_share")), "disk")
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if learned.options.variant != "optimized":
            return None
        with _lock:
            _on_disk[(where, self.plan)] = dataclasses.replace(learned, source="memory")
        return learned

    def remember(self, options: CodegenOptions, kept_share: float | None) -> None:
        """Remember ``options`` in the process, and record them on disk (written to a temporary
        file and renamed: a reader in another process sees the whole record or none) unless
        this process read or wrote that record already: every job of a pipeline enters its
        optimized variant, and a file written per job is a share of a short job's time."""
        learned = Learned(options, kept_share)
        where = self._folder()
        with _lock:
            _memory[self.plan] = learned
            _memory.move_to_end(self.plan)
            while len(_memory) > MEMORY_LIMIT:
                _memory.popitem(last=False)
            if where is None or _on_disk.get((where, self.plan)) == learned:
                return
            _on_disk[(where, self.plan)] = learned
        text = json.dumps({"format": FORMAT, "options": dataclasses.asdict(options), "kept_share": kept_share})
        try:
            fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=_SUFFIX)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, where / f"{self.plan}{_SUFFIX}")
        except OSError:
            with _lock:
                _on_disk.pop((where, self.plan), None)  # not written: a later job tries again

    def forget(self, on_disk: bool = True) -> None:
        """Forget the process's memory (the next job profiles afresh) and, ``on_disk``, delete
        the record (its variant deoptimized: the next process profiles afresh too)."""
        where = self._folder()
        with _lock:
            _memory.pop(self.plan, None)
            if not on_disk:
                return
            _on_disk.pop((where, self.plan), None)
        if where is None:
            return
        try:
            (where / f"{self.plan}{_SUFFIX}").unlink()
        except OSError:
            pass


def _share(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and 0 <= value <= 1 else None


def forget_all() -> None:
    """Forget what this process remembers of every plan (tests: each starts afresh); the records
    on disk stay."""
    with _lock:
        _memory.clear()
        _seen.clear()
        _on_disk.clear()
