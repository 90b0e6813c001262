"""numpy peer of YSB: vectorized filter per batch, then one bincount over (window, key) ids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .base import Peer, window_result


def view_rows(array: pa.Array, view: str | int) -> np.ndarray:
    """Positions of the rows of an event_type batch (dictionary or int codes) equal to view."""
    if pa.types.is_dictionary(array.type):
        matches = np.flatnonzero(array.dictionary.to_numpy(zero_copy_only=False) == view)
        if not matches.size:
            return np.empty(0, dtype=np.intp)
        return np.flatnonzero(array.indices.to_numpy() == matches[0])
    return np.flatnonzero(array.to_numpy() == view)


def count_windows(ts: np.ndarray, keys: np.ndarray, window_ms: int) -> tuple[np.ndarray, ...]:
    """Count rows per (tumbling window start, key): dense bincount when the id space is small
    enough, else np.unique over combined ids."""
    if ts.size == 0:
        return (np.empty(0, np.int64),) * 3
    win = ts // window_ms
    w0, k0 = win.min(), keys.min()
    n_win, n_key = int(win.max() - w0) + 1, int(keys.max() - k0) + 1
    if n_win * n_key <= 4 * ts.size + (1 << 20):
        counts = np.bincount((win - w0) * n_key + (keys - k0), minlength=n_win * n_key)
        ids = np.flatnonzero(counts)
        counts = counts[ids]
    elif n_win * n_key < 1 << 62:
        ids, counts = np.unique((win - w0) * n_key + (keys - k0), return_counts=True)
    else:
        pairs, counts = np.unique(np.stack([win, keys], axis=1), axis=0, return_counts=True)
        return pairs[:, 0] * window_ms, pairs[:, 1], counts
    return (ids // n_key + w0) * window_ms, ids % n_key + k0, counts


class NumpyPeer(Peer):
    name = "numpy"
    description = "numpy: filter per batch, concatenate, bincount on (window, key) ids, 1 thread"

    def setup(self, data) -> None:
        self.data = data
        self.info.update(version=np.__version__, threads=1)

    def run(self) -> pa.Table:
        names = self.data.table.schema.names
        i_ts, i_type, i_key = (names.index(c) for c in ("event_time", "event_type", "campaign_id"))
        ts_parts, key_parts = [], []
        for batch in self.data.table.to_batches():
            # positions + take: ~4x faster than boolean-mask indexing in numpy 2.4
            rows = view_rows(batch.column(i_type), self.data.view_value)
            ts_parts.append(batch.column(i_ts).to_numpy().take(rows))
            key_parts.append(batch.column(i_key).to_numpy().take(rows))
        ts = np.concatenate(ts_parts) if ts_parts else np.empty(0, np.int64)
        keys = np.concatenate(key_parts) if key_parts else np.empty(0, np.int64)
        return window_result(*count_windows(ts, keys, self.data.window_ms))
