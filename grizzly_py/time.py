"""Durations: ``Time.seconds(10)`` and friends, normalized to integer milliseconds."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass


@dataclass(frozen=True)
class Duration:
    """A span of time in whole milliseconds."""

    ms: int

    def __post_init__(self):
        if not isinstance(self.ms, int):
            raise TypeError(f"a duration is a whole number of milliseconds, got {self.ms!r}")

    def __repr__(self) -> str:
        return f"Time.milliseconds({self.ms})"


class Time:
    """Flink-style duration constructors."""

    @staticmethod
    def milliseconds(n: int) -> Duration:
        return Duration(int(n))

    @staticmethod
    def seconds(n: int) -> Duration:
        return Duration(int(n * 1000))

    @staticmethod
    def minutes(n: int) -> Duration:
        return Duration(int(n * 60_000))

    @staticmethod
    def hours(n: int) -> Duration:
        return Duration(int(n * 3_600_000))


def to_millis(value, *, what: str) -> int:
    """Accept a ``Duration``, a ``datetime.timedelta`` or an int of milliseconds."""
    if isinstance(value, Duration):
        return value.ms
    if isinstance(value, _dt.timedelta):
        return value // _dt.timedelta(milliseconds=1)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{what}: expected Time.seconds(...), a datetime.timedelta or milliseconds, got {value!r}")
