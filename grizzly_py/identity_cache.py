"""``IdentityCache``: a value per live object, by the object's identity, for objects that cannot be
dictionary keys (Arrow tables and batches define ``==`` elementwise and are unhashable). An
entry goes when its object does; a finalizer may be attached to clean up what the value names."""

from __future__ import annotations

import weakref
from typing import Callable, Generic, TypeVar

V = TypeVar("V")


class IdentityCache(Generic[V]):
    def __init__(self, on_drop: Callable[[V], None] | None = None) -> None:
        self._entries: dict[int, tuple[weakref.ref, V]] = {}
        self._on_drop = on_drop

    def get(self, obj) -> V | None:
        found = self._entries.get(id(obj))
        return found[1] if found is not None and found[0]() is obj else None

    def put(self, obj, value: V) -> V:
        key = id(obj)
        self._entries[key] = (weakref.ref(obj), value)
        weakref.finalize(obj, self._drop, key, value)
        return value

    def _drop(self, key: int, value: V) -> None:
        found = self._entries.get(key)
        if found is not None and found[1] is value:  # (not an entry of a later object at that id)
            del self._entries[key]
        if self._on_drop is not None:
            self._on_drop(value)
