"""Durations: ``Time.seconds(10)`` and friends, normalized to integer milliseconds.

Every duration argument of the API (window sizes and slides, session gaps, interval-join bounds,
watermark bounds, checkpoint intervals) goes through ``to_millis``, which takes a ``Duration``
(``Time.seconds(10)``), a ``datetime.timedelta`` or a Spark-style string (``"10 seconds"``). A
bare number is refused: ``of(10)`` would have to guess its unit (Flink's API takes ``Time``
objects only), and guessing milliseconds silently made ten-second windows ten milliseconds long.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation


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
    """Flink-style duration constructors: ``Time.seconds(10)`` is a ``Duration`` of 10,000 ms."""

    @staticmethod
    def milliseconds(n: int) -> Duration:
        """``n`` milliseconds."""
        return Duration(int(n))

    @staticmethod
    def seconds(n: int) -> Duration:
        """``n`` seconds (a fraction is cut to whole milliseconds: ``Time.seconds(1.5)`` is 1,500 ms)."""
        return Duration(int(n * 1000))

    @staticmethod
    def minutes(n: int) -> Duration:
        """``n`` minutes."""
        return Duration(int(n * 60_000))

    @staticmethod
    def hours(n: int) -> Duration:
        """``n`` hours."""
        return Duration(int(n * 3_600_000))

    @staticmethod
    def days(n: int) -> Duration:
        """``n`` days."""
        return Duration(int(n * 86_400_000))


# the units of Spark-style duration strings, singular or plural, in milliseconds
_UNITS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}
_DURATION_TEXT = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s+([a-z]+?)s?\s*", re.IGNORECASE)
_FORMS = '"10 seconds", "1 minute", "500 milliseconds", "2 hours", "1 day" (singular or plural)'


def parse_duration(text: str, *, what: str) -> int:
    """Milliseconds of a Spark-style duration string such as ``"10 seconds"`` (see ``_FORMS``)."""
    m = _DURATION_TEXT.fullmatch(text)
    unit = _UNITS.get(m.group(2).lower()) if m else None
    if unit is None:
        raise TypeError(f"{what}: cannot read {text!r} as a duration; write it as {_FORMS}, "
                        f"or use Time.seconds(10)")
    try:
        ms = Decimal(m.group(1)) * unit
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        raise TypeError(f"{what}: cannot read {text!r} as a duration") from None
    if ms != ms.to_integral_value():
        raise TypeError(f"{what}: {text!r} is not a whole number of milliseconds")
    return int(ms)


def to_millis(value, *, what: str) -> int:
    """Milliseconds of a ``Duration``, a ``datetime.timedelta`` or a duration string; a bare
    number is a ``TypeError`` that says how to write it with its unit."""
    if isinstance(value, Duration):
        return value.ms
    if isinstance(value, _dt.timedelta):
        return value // _dt.timedelta(milliseconds=1)
    if isinstance(value, str):
        return parse_duration(value, what=what)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise TypeError(f"{what}: a bare number has no unit; write Time.seconds({value}) or "
                        f"Time.milliseconds({value}) (or a string such as \"{value} seconds\")")
    raise TypeError(f"{what}: expected a duration such as Time.seconds(10), \"10 seconds\" or a "
                    f"datetime.timedelta, got {value!r}")
