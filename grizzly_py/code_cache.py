"""Machine code kept on disk between processes (as Numba's ``cache=True`` does).

A new process compiles every kernel it runs: ~40-110 ms of LLVM per module on this machine,
before the first record of a short job (``grizzly run``, ``grizzly explain``, a new Spark
Python worker). MCJIT's object cache lets ``jit`` hand LLVM the object file of an earlier
compile instead, so a module compiled once loads in a few milliseconds.

Where: ``$GRIZZLY_CACHE_DIR/code`` (default ``~/.cache/grizzly-py/code``, beside the templates'
bytecode cache); ``GRIZZLY_CODE_CACHE=off`` turns it off. A file is loaded only from a folder
that the user owns and that nobody else may write to (it holds code the process will run), and
only when its checksum holds. Anything unusual (no folder, no permission, a short or corrupt
file) means a normal compile, never an error.

The key covers everything the machine code depends on: the module's IR and optimization level,
the runtime IR linked into it, llvmlite and LLVM versions, and the host CPU's name and features.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from functools import lru_cache
from pathlib import Path

FORMAT = 1          # bump when the key or the file layout changes
MAX_FILES = 4096    # objects kept; the oldest tenth go when a store finds more
_DIGEST = 32        # a file: sha256 of the object, then the object


def folder() -> Path | None:
    """The cache folder, or None when the cache is off or the folder is not safe to load from."""
    return _folder(os.environ.get("GRIZZLY_CODE_CACHE", ""), os.environ.get("GRIZZLY_CACHE_DIR", ""))


@lru_cache(maxsize=8)
def _folder(switch: str, root: str) -> Path | None:
    if switch.lower() in ("off", "0", "false", "no"):
        return None
    path = Path(root or Path.home() / ".cache" / "grizzly-py") / "code"
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = path.stat()
    except OSError:
        return None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None  # another user could place code here
    return path


def context(runtime_ir: str, host: tuple[str, ...]) -> str:
    """A digest of what every module's machine code depends on besides its own IR: the runtime
    IR linked into it, the LLVM/llvmlite versions and the host CPU (computed once per process)."""
    h = hashlib.sha256(f"grizzly-py code cache {FORMAT}\n".encode())
    for part in (*host, runtime_ir):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part.encode())
    return h.hexdigest()


def key(module_key: str, context_digest: str) -> str:
    """The file name of a module's object: ``module_key`` (the digest of its IR and optimization
    level, ``jit``'s in-process key) under ``context_digest`` (``context``)."""
    return hashlib.sha256(f"{context_digest}\n{module_key}".encode()).hexdigest()


def holds(name: str) -> bool:
    """Whether an object is stored under ``name`` (``load`` still checks it)."""
    where = folder()
    return where is not None and (where / f"{name}.o").is_file()


def load(name: str) -> bytes | None:
    """The object stored under ``name``, or None (none, unreadable, or failing its checksum:
    then the file goes, and the compile that follows writes it again)."""
    where = folder()
    if where is None:
        return None
    path = where / f"{name}.o"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, obj = data[:_DIGEST], data[_DIGEST:]
    if len(data) <= _DIGEST or hashlib.sha256(obj).digest() != digest:
        try:
            path.unlink()
        except OSError:
            pass
        return None
    return obj


def store(name: str, obj: bytes) -> None:
    """Keep ``obj`` under ``name`` (written to a temporary file and renamed, so a reader in
    another process sees the whole file or none)."""
    where = folder()
    if where is None or not obj:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=".o")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(obj).digest() + obj)
        os.replace(tmp, where / f"{name}.o")
    except OSError:
        return
    _prune(where)


def _prune(where: Path) -> None:
    try:
        files = [(p.stat().st_mtime, p) for p in where.glob("*.o")]
    except OSError:
        return
    if len(files) <= MAX_FILES:
        return
    files.sort()
    for _, p in files[:len(files) - MAX_FILES + MAX_FILES // 10]:
        try:
            p.unlink()
        except OSError:
            pass
