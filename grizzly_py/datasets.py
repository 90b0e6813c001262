"""Parquet datasets: a path resolved into the files and row groups a Parquet source reads.

A path names one file, a directory of part files (at any depth), or a glob (``*``, ``?``,
``[...]`` within one path segment: ``events/day=*/part-*.parquet``). ``pyarrow.dataset`` finds
the files (skipping names that start with ``.`` or ``_``: Spark's ``_SUCCESS``, checksum files)
and reads hive-style directories (``day=3/``) as partition columns, which follow the files'
columns. The filesystem is any one pyarrow reaches from the path (local paths, ``file://``,
``s3://``, ``gs://``, ``hdfs://``, ``abfs://``; ``s3a://`` and ``s3n://`` as ``s3://``), else
fsspec's where it is installed.

The stream's order: files sorted by path, each file's row groups in order, one batch of the
stream per row group (``RowGroup``). The embedded engine and the Spark tasks read the same row
groups in the same order, so a row group's number is its batch number everywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pyarrow as pa

GLOB_CHARS = "*?["


class BadDatasetError(ValueError):
    """A path that holds no readable Parquet data (``sources.BadInputError`` subclasses are
    raised by the callers that know the source's name)."""


@dataclass(frozen=True)
class RowGroup:
    """One batch of the stream: row group ``index`` of file number ``file``."""

    number: int     # the batch number in the whole dataset
    file: int
    index: int
    rows: int


@dataclass(eq=False)
class ParquetDataset:
    path: str                                   # as given
    filesystem: object                          # a pyarrow.fs.FileSystem
    files: tuple[str, ...]                      # paths on ``filesystem``, sorted
    partitions: tuple[dict, ...]                # per file: partition column -> value
    schema: pa.Schema                           # the files' columns, then the partition columns
    _metadata: dict = field(default_factory=dict, repr=False)

    def __getstate__(self):  # footers are read again where needed, not shipped
        state = dict(self.__dict__)
        state["_metadata"] = {}
        return state

    @property
    def partition_names(self) -> list[str]:
        return list(self.partitions[0]) if self.partitions else []

    def describe(self, file: int) -> str:
        """The file's name in messages: its path (the dataset's own path for a single file)."""
        return self.files[file] if len(self.files) > 1 else self.path

    def open(self, file: int, checksums: bool = True):
        """A ``pyarrow.parquet.ParquetFile`` of file number ``file`` (page checksums verified
        where the writer stored them)."""
        import pyarrow.parquet as pq
        return pq.ParquetFile(self.files[file], filesystem=self.filesystem, page_checksum_verification=checksums)

    def metadata(self, file: int):
        md = self._metadata.get(file)
        if md is None:
            md = self._metadata[file] = self.open(file, checksums=False).metadata
        return md

    def row_groups(self) -> list[RowGroup]:
        """Every file's row groups, from the footers as they are now (read again on each call:
        files may have changed since the last run; ``metadata`` answers from this read)."""
        self._metadata = {}
        out = []
        for f in range(len(self.files)):
            md = self.metadata(f)
            for i in range(md.num_row_groups):
                out.append(RowGroup(len(out), f, i, md.row_group(i).num_rows))
        return out

    def read(self, handle, group: RowGroup, columns: list[str] | None) -> pa.Table:
        """Row group ``group`` of the open file ``handle`` (``open(group.file)``), only
        ``columns`` (None: all) in that order, partition columns included."""
        names = self.schema.names if columns is None else columns
        parts = set(self.partition_names)
        table = handle.read_row_group(group.index, columns=[n for n in names if n not in parts])
        if not parts.intersection(names):
            return table
        values = self.partitions[group.file]
        arrays = [pa.repeat(pa.scalar(values[n], self.schema.field(n).type), table.num_rows)
                  if n in parts else table.column(n) for n in names]
        return pa.Table.from_arrays(arrays, names=names)


def resolve(path: str) -> ParquetDataset:
    """The Parquet dataset at ``path`` (a file, a directory or a glob). ``FileNotFoundError`` for a
    path that does not exist or a glob that matches nothing, ``BadDatasetError`` for a directory
    without data files or a file that is not Parquet."""
    import pyarrow.dataset as ds
    filesystem, where = filesystem_of(path)
    if any(c in where for c in GLOB_CHARS):
        base, files = _glob(filesystem, where)
        if not files:
            raise FileNotFoundError(f"parquet:{path}: no file matches the pattern")
        source, extra = files, {"partition_base_dir": base}
    else:
        info = filesystem.get_file_info(where)
        if info.type.name == "NotFound":
            raise FileNotFoundError(f"parquet:{path}: no such file or directory")
        source, extra = where, {}
    try:
        dataset = ds.dataset(source, filesystem=filesystem, format="parquet", partitioning="hive", **extra)
    except (pa.ArrowException, OSError) as e:
        raise BadDatasetError(f"parquet:{path}: not a readable Parquet file (truncated or corrupt?): {e}") from e
    fragments = sorted(dataset.get_fragments(), key=lambda f: f.path)
    if not fragments:
        raise BadDatasetError(f"parquet:{path}: holds no Parquet files (names starting with '.' or '_' are skipped)")
    keys = [ds.get_partition_keys(f.partition_expression) for f in fragments]
    names = [n for n in dataset.schema.names if any(n in k for k in keys)]  # a file without a key: null
    partitions = tuple({n: k.get(n) for n in names} for k in keys)
    return ParquetDataset(path, filesystem, tuple(f.path for f in fragments), partitions, dataset.schema)


def filesystem_of(path: str):
    """(pyarrow filesystem, path on it) for a local path or a URI."""
    from pyarrow import fs
    if "://" not in path:
        return fs.LocalFileSystem(), os.path.abspath(path)
    scheme, rest = path.split("://", 1)
    uri = f"s3://{rest}" if scheme in ("s3a", "s3n") else path
    try:
        return fs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        try:
            import fsspec
        except ImportError:
            raise ValueError(f"parquet:{path}: pyarrow does not reach {scheme}:// ({e}); install fsspec and "
                             f"its {scheme} filesystem to read it") from e
        filesystem, where = fsspec.core.url_to_fs(path)
        return fs.PyFileSystem(fs.FSSpecHandler(filesystem)), where


def _glob(filesystem, pattern: str) -> tuple[str, list[str]]:
    """The directory above the first segment with a wildcard, and the files under it that
    match ``pattern`` segment by segment (hidden names skipped, as in a directory)."""
    from pyarrow import fs
    segments = pattern.split("/")
    first = next(i for i, s in enumerate(segments) if any(c in s for c in GLOB_CHARS))
    base = "/".join(segments[:first]) or "/"
    try:
        infos = filesystem.get_file_info(fs.FileSelector(base, recursive=True))
    except FileNotFoundError:
        return base, []
    files = []
    for info in infos:
        rel = info.path[len(base):].lstrip("/").split("/")
        if info.type.name == "File" and not any(p.startswith((".", "_")) for p in rel) \
                and info.path.count("/") == pattern.count("/") and PurePosixPath(info.path).match(pattern):
            files.append(info.path)
    return base, sorted(files)
