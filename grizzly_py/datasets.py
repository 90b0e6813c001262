"""File datasets: a path resolved into the files and row groups a Parquet (or ORC) source reads.

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

Formats (``FORMATS``, one ``FileFormat`` each): Parquet, and ORC for ``from_spark`` scans of ORC
files (``spark/file_scans.py``), whose stripes are its row groups. pyarrow gives an ORC file's row
count and stripe count but not each stripe's rows, so an ORC row group's ``rows`` is the file's
rows spread evenly over its stripes: an estimate that only balances splits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pyarrow as pa

GLOB_CHARS = "*?["


class FileFormat:
    """How one file format is opened and read by row group; ``FORMATS`` holds one of each."""

    key = name = ""  # the key in ``FORMATS`` (pyarrow.dataset's format name); the name in messages

    def open(self, filesystem, path: str, checksums: bool):
        raise NotImplementedError

    def footer(self, handle):
        """The file's statistics where the format keeps them (None: not read)."""
        return None

    def group_rows(self, handle, footer) -> list[int]:
        """Each row group's row count."""
        raise NotImplementedError

    def read_group(self, handle, index: int, columns: list[str]) -> pa.Table:
        """Row group ``index`` of ``handle``, only ``columns`` in that order."""
        raise NotImplementedError


class ParquetFormat(FileFormat):
    key, name = "parquet", "Parquet"

    def open(self, filesystem, path, checksums):
        import pyarrow.parquet as pq
        return pq.ParquetFile(path, filesystem=filesystem, page_checksum_verification=checksums)

    def footer(self, handle):
        return handle.metadata

    def group_rows(self, handle, footer):
        return [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]

    def read_group(self, handle, index, columns):
        return handle.read_row_group(index, columns=columns)


class OrcFormat(FileFormat):
    key, name = "orc", "ORC"

    def open(self, filesystem, path, checksums):
        import pyarrow.orc as orc
        return orc.ORCFile(filesystem.open_input_file(path))

    def group_rows(self, handle, footer):
        stripes, rows = handle.nstripes, handle.nrows
        return [rows // stripes + (i < rows % stripes) for i in range(stripes)]

    def read_group(self, handle, index, columns):  # a stripe comes in the file's column order
        return pa.Table.from_batches([handle.read_stripe(index, columns=columns)]).select(columns)


FORMATS = {f.key: f for f in (ParquetFormat(), OrcFormat())}


class BadDatasetError(ValueError):
    """A path that holds no readable data files (``sources.BadInputError`` subclasses are
    raised by the callers that know the source's name)."""


@dataclass(frozen=True)
class RowGroup:
    """One batch of the stream: row group ``index`` of file number ``file``."""

    number: int     # the batch number in the whole dataset
    file: int
    index: int
    rows: int


@dataclass(eq=False)
class FileDataset:
    path: str                                   # as given
    filesystem: object                          # a pyarrow.fs.FileSystem
    files: tuple[str, ...]                      # paths on ``filesystem``, sorted
    partitions: tuple[dict, ...]                # per file: partition column -> value
    schema: pa.Schema                           # the files' columns, then the partition columns
    format: str = "parquet"                     # a key of ``FORMATS``
    _metadata: dict = field(default_factory=dict, repr=False)

    @property
    def format_name(self) -> str:
        return FORMATS[self.format].name

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
        """The open file number ``file`` (a ``pyarrow.parquet.ParquetFile``, page checksums
        verified where the writer stored them, or a ``pyarrow.orc.ORCFile``)."""
        return FORMATS[self.format].open(self.filesystem, self.files[file], checksums)

    def metadata(self, file: int):
        """A file's footer with its statistics (None where the format's are not read: ORC)."""
        if file not in self._metadata:
            self._metadata[file] = FORMATS[self.format].footer(self.open(file, checksums=False))
        return self._metadata[file]

    def row_groups(self) -> list[RowGroup]:
        """Every file's row groups, from the footers as they are now (read again on each call:
        files may have changed since the last run; ``metadata`` answers from this read)."""
        self._metadata = {}
        file_format = FORMATS[self.format]
        out = []
        for f in range(len(self.files)):
            handle = self.open(f, checksums=False)
            footer = self._metadata[f] = file_format.footer(handle)
            for i, rows in enumerate(file_format.group_rows(handle, footer)):
                out.append(RowGroup(len(out), f, i, rows))
        return out

    def read(self, handle, group: RowGroup, columns: list[str] | None) -> pa.Table:
        """Row group ``group`` of the open file ``handle`` (``open(group.file)``), only
        ``columns`` (None: all) in that order, partition columns included."""
        names = self.schema.names if columns is None else columns
        parts = set(self.partition_names)
        file_columns = [n for n in names if n not in parts]
        table = FORMATS[self.format].read_group(handle, group.index, file_columns)
        if not parts.intersection(names):
            return table
        values = self.partitions[group.file]
        arrays = [pa.repeat(pa.scalar(values[n], self.schema.field(n).type), table.num_rows)
                  if n in parts else table.column(n) for n in names]
        return pa.Table.from_arrays(arrays, names=names)


def resolve(path: str, format: str = "parquet") -> FileDataset:
    """The dataset of ``format`` (a key of ``FORMATS``) at ``path`` (a file, a directory or a
    glob). ``FileNotFoundError`` for a path that does not exist or a glob that matches nothing,
    ``BadDatasetError`` for a directory without data files or a file not of that format."""
    import pyarrow.dataset as ds
    name = FORMATS[format].name
    filesystem, where = filesystem_of(path, format)
    if any(c in where for c in GLOB_CHARS):
        base, files = _glob(filesystem, where)
        if not files:
            raise FileNotFoundError(f"{format}:{path}: no file matches the pattern")
        source, extra = files, {"partition_base_dir": base}
    else:
        info = filesystem.get_file_info(where)
        if info.type.name == "NotFound":
            raise FileNotFoundError(f"{format}:{path}: no such file or directory")
        source, extra = where, {}
    try:
        dataset = ds.dataset(source, filesystem=filesystem, format=format, partitioning="hive", **extra)
    except (pa.ArrowException, OSError) as e:
        raise BadDatasetError(f"{format}:{path}: not a readable {name} file (truncated or corrupt?): {e}") from e
    fragments = sorted(dataset.get_fragments(), key=lambda f: f.path)
    if not fragments:
        raise BadDatasetError(f"{format}:{path}: holds no {name} files (names starting with '.' or '_' are skipped)")
    keys = [ds.get_partition_keys(f.partition_expression) for f in fragments]
    names = [n for n in dataset.schema.names if any(n in k for k in keys)]  # a file without a key: null
    partitions = tuple({n: k.get(n) for n in names} for k in keys)
    return FileDataset(path, filesystem, tuple(f.path for f in fragments), partitions, dataset.schema, format)


def filesystem_of(path: str, format: str = "parquet"):
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
            raise ValueError(f"{format}:{path}: pyarrow does not reach {scheme}:// ({e}); install fsspec and "
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
