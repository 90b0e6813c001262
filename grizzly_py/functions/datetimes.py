"""Date and time functions of timestamps (``col("ts").dt.<name>(...)``): in UTC, on timestamp
columns and on int64 columns of epoch milliseconds alike, for every int64 (years before 1 and
after 9999 included: the proleptic Gregorian calendar, computed with integers).

``strftime`` takes ``%Y %m %d %H %M %S %j %a %b %%`` and literal text (English day and month
names); ``%Y`` is at least four digits (``-0044`` for 45 BC: astronomical years). ``weekday`` is
1 for Monday to 7 for Sunday (ISO)."""

from __future__ import annotations

import re

from ..types import INT64, STRING
from .registry import FunctionSpec, register

MS_PER_DAY = 86_400_000
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
DIRECTIVES = "YmdHMSjab%"


def civil_from_days(z: int) -> tuple[int, int, int]:
    """(year, month, day) of day ``z`` since 1970-01-01 (Howard Hinnant's ``civil_from_days``)."""
    z += 719468
    era = z // 146097  # (floor division: Hinnant adjusts truncating division to the same)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def day_of_year(y: int, m: int, d: int) -> int:
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    before = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)[m - 1]
    return before + d + (1 if leap and m > 2 else 0)


def parts(ms: int) -> dict:
    days, rest = divmod(ms, MS_PER_DAY)
    y, m, d = civil_from_days(days)
    return dict(year=y, month=m, day=d, hour=rest // 3_600_000, minute=rest // 60_000 % 60,
                second=rest // 1000 % 60, weekday=(days + 3) % 7 + 1, yday=day_of_year(y, m, d))


def _year_text(y: int) -> str:
    return f"{y:04d}" if y >= 0 else f"-{-y:04d}"


class DateTimeFunction(FunctionSpec):
    result = INT64

    def output_type(self, call, arg_types):
        t = arg_types[0]
        self.require(t, "needs a timestamp or int64 epoch milliseconds", call,
                     t.is_timestamp or (t.is_integer and t.name == "int64"))
        return self.result


class Part(DateTimeFunction):
    def __init__(self, part: str):
        self.name, self.part = f"dt.{part}", part

    def reference(self, call, ms):
        return parts(ms)[self.part]


class Strftime(DateTimeFunction):
    name, result = "dt.strftime", STRING

    def check_options(self, options):
        fmt = options["format"]
        if not isinstance(fmt, str):
            raise TypeError(f"dt.strftime: the format must be a string, got {fmt!r}")
        for m in re.finditer(r"%(.?)", fmt):
            if m.group(1) == "" or m.group(1) not in DIRECTIVES:
                raise ValueError(f"dt.strftime: {fmt!r} uses %{m.group(1)}; compiled formats take "
                                 f"{' '.join('%' + c for c in DIRECTIVES)} and literal text")

    def reference(self, call, ms):
        p = parts(ms)
        values = {"Y": _year_text(p["year"]), "m": f"{p['month']:02d}", "d": f"{p['day']:02d}",
                  "H": f"{p['hour']:02d}", "M": f"{p['minute']:02d}", "S": f"{p['second']:02d}",
                  "j": f"{p['yday']:03d}", "a": DAYS[p["weekday"] - 1], "b": MONTHS[p["month"] - 1], "%": "%"}
        return re.sub(r"%(.)", lambda m: values[m.group(1)], call.option("format"))


for _spec in (Strftime(), *(Part(p) for p in ("year", "month", "day", "hour", "minute", "weekday"))):
    register(_spec)
