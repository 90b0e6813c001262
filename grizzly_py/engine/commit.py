"""The commit of a job's file sinks: every sink's final file appears, or none does.

Each file sink writes to a temporary name of its own (``sinks.temporary_name``: unique per run, so
two jobs never write into one file) and, when its input ends, closes and syncs it there
(``FileSink.finish``). Once every query of the job has finished, ``publish``

1. checks that the job may still commit (``fence``: the checkpoint owner's epoch, ``ownership.py``);
2. writes a *commit record*, a manifest listing every (temporary, final) pair, and syncs it;
3. renames each temporary file to its final name and syncs the directories;
4. removes the manifest.

A rename is atomic per file; the manifest makes the set atomic with respect to crashes: a job that
dies (or whose rename fails) between 2 and 4 leaves the manifest, and the next start of the same job
rolls it forward (``roll_forward``: the listed renames whose temporary file is still there) before
it does anything else. A job that fails before 2 leaves no final file (its temporary files are
removed). A job with one file sink renames it without a manifest.

The manifest lives in the checkpoint directory when the job checkpoints (its owner's lock covers
it), or else next to the first final file; its name carries a hash of the job's final paths, so a
job rolls forward only its own commits.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import secrets
import time

from .sinks import remove_orphans
from .snapshot import fsync_directory

_PREFIX = ".grizzly-commit-"


def manifest_dir(finals: list[str], checkpoint_dir: str | None) -> str | None:
    """Where the commit record of a job with these final paths goes (None: no file sinks)."""
    if checkpoint_dir is not None:
        return checkpoint_dir
    return os.path.dirname(os.path.abspath(sorted(finals)[0])) if finals else None


def recover(finals: list[str], checkpoint_dir: str | None) -> str | None:
    """Before a job with these final paths runs: complete its unfinished commits, then remove
    the temporary files its killed runs left; where its commit record goes (``manifest_dir``)."""
    directory = manifest_dir(finals, checkpoint_dir)
    roll_forward(directory, finals)
    for final in finals:
        remove_orphans(final)
    return directory


def _key(finals: list[str]) -> str:
    return hashlib.sha256("\0".join(sorted(os.path.abspath(f) for f in finals)).encode()).hexdigest()[:16]


def roll_forward(directory: str | None, finals: list[str]) -> int:
    """Complete the commits that a job with these final paths recorded and did not finish (oldest
    first); the number of files renamed."""
    if directory is None or not finals:
        return 0
    records = []
    for path in glob.glob(os.path.join(directory, f"{_PREFIX}{_key(finals)}-*.json")):
        try:
            with open(path, encoding="utf-8") as f:
                records.append((json.load(f), path))
        except FileNotFoundError:  # another run of the job completed it meanwhile
            continue
        except ValueError:  # a manifest is written under a temporary name and renamed: this one is not ours
            continue
    renamed = 0
    for record, path in sorted(records, key=lambda r: r[0]["created_unix"]):
        renamed += _rename(record["files"])
        _remove(path)
    return renamed


def publish(sinks, directory: str | None, fence=None) -> None:
    """Move the finished ``sinks``' files (``FileSink``) to their final names, all or none."""
    if not sinks:
        return
    if fence is not None:
        fence()
    files = [[s.tmp, s.spec.path] for s in sinks]
    if len(files) == 1:
        _rename(files)
        sinks[0].published = True
        return
    finals = [final for _, final in files]
    manifest = os.path.join(directory, f"{_PREFIX}{_key(finals)}-{secrets.token_hex(6)}.json")
    record = json.dumps({"created_unix": time.time(), "pid": os.getpid(), "files": files}).encode("utf-8")
    tmp = f"{manifest}.tmp"
    with open(tmp, "wb") as f:
        f.write(record)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, manifest)
    fsync_directory(directory)
    for s in sinks:  # from here on the commit is decided: its temporary files are the next start's
        s.recorded = True
    _rename(files)
    for s in sinks:
        s.published = True
    _remove(manifest)


def _rename(files) -> int:
    renamed = 0
    for tmp, final in files:
        try:
            os.replace(tmp, final)
            renamed += 1
        except FileNotFoundError:
            if os.path.exists(tmp):  # the final name's directory is gone: nothing we may guess
                raise
    for folder in {os.path.dirname(os.path.abspath(final)) for _, final in files}:
        fsync_directory(folder)
    return renamed


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    fsync_directory(os.path.dirname(path))


__all__ = ["manifest_dir", "publish", "recover", "roll_forward"]
