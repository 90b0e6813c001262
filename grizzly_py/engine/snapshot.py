"""The snapshot file format: one checkpoint of a job in one self-checking file.

Layout (little-endian)::

    magic    8 bytes   b"GZSNAP\\r\\n"
    version  u32       FORMAT_VERSION (written; READABLE_VERSIONS are read)
    length   u64       payload bytes
    sha256   32 bytes  of the payload
    payload            a NumPy ``.npz`` archive (``allow_pickle=False``): ``meta``, the snapshot's
                       JSON document as UTF-8 bytes, and ``a0``, ``a1``, ... the arrays it refers to
                       as ``{"__array__": i}``

A file that is too short, has another magic, a version this grizzly-py does not read, a payload of the wrong length or a
checksum that does not match raises ``SnapshotError``: the checkpoint store skips it and falls back
to the previous snapshot. Files are written to a temporary name, flushed to disk and renamed, so a
snapshot under its final name is complete.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct

import numpy as np

MAGIC = b"GZSNAP\r\n"
FORMAT_VERSION = 3
# Versions this grizzly-py reads. 2 added the state of sort-based grouping (``sort_snapshot.py``:
# a window kernel's blocks of key/pointer arrays, the sort-merge join's); every other kernel's
# state is as in 1, and a version-1 file (which cannot hold sort-based grouping: such jobs refused
# checkpoints then) restores as before. 3 added free ids to the interned strings (ids of released
# strings, ``state_snapshot.export_strings``), which a reader of 2 would take for strings; files
# of 1 and 2 have none.
READABLE_VERSIONS = (1, 2, 3)
_HEADER = struct.Struct("<8sIQ32s")


class SnapshotError(ValueError):
    """A snapshot file that cannot be used (partial, corrupt, or of another format version)."""


def _split(value, arrays: list[np.ndarray]):
    """``value`` with every numpy array replaced by a reference into ``arrays``."""
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"__array__": len(arrays) - 1}
    if isinstance(value, dict):
        return {k: _split(v, arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_split(v, arrays) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    return value


def _join(value, arrays):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return arrays[f"a{value['__array__']}"]
        return {k: _join(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_join(v, arrays) for v in value]
    return value


def encode(document: dict) -> bytes:
    """The bytes of a snapshot file holding ``document`` (JSON values and numpy arrays)."""
    arrays: list[np.ndarray] = []
    meta = json.dumps(_split(document, arrays)).encode("utf-8")
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(meta, dtype=np.uint8), **{f"a{i}": a for i, a in enumerate(arrays)})
    payload = buffer.getvalue()
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload), hashlib.sha256(payload).digest()) + payload


def decode(data: bytes, name: str = "snapshot") -> dict:
    """The document of a snapshot file's bytes; ``SnapshotError`` if they are not a whole, intact
    snapshot of this format version."""
    if len(data) < _HEADER.size:
        raise SnapshotError(f"{name}: truncated ({len(data)} bytes, not even a header)")
    magic, version, length, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise SnapshotError(f"{name}: not a grizzly-py snapshot (magic {magic!r})")
    if version not in READABLE_VERSIONS:
        raise SnapshotError(f"{name}: snapshot format version {version}, this grizzly-py reads versions "
                            f"{', '.join(map(str, READABLE_VERSIONS))}")
    payload = data[_HEADER.size:]
    if len(payload) != length:
        raise SnapshotError(f"{name}: truncated or padded (payload {len(payload)} bytes, header says {length})")
    if hashlib.sha256(payload).digest() != digest:
        raise SnapshotError(f"{name}: checksum mismatch (corrupt)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
        document = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
        return _join(document, arrays)
    except (ValueError, KeyError, OSError) as e:  # an intact checksum over bytes we cannot read
        raise SnapshotError(f"{name}: unreadable payload: {e}") from e


def fsync_directory(path: str) -> None:
    """Make a rename or removal in directory ``path`` durable (where the platform allows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` is either absent or complete: a temporary file,
    flushed to disk, renamed."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(os.path.dirname(path) or ".")


def read(path: str) -> dict:
    with open(path, "rb") as f:
        return decode(f.read(), os.path.basename(path))


__all__ = ["FORMAT_VERSION", "MAGIC", "READABLE_VERSIONS", "SnapshotError", "decode", "encode", "fsync_directory", "read",
           "write_atomically"]
