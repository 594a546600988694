"""Cron expressions as the original's scheduler (croner) reads them, in the process's local time.

Five fields (minute hour day-of-month month day-of-week) or six (seconds first); `*`, `?`, lists,
ranges, steps (`*/15`, `1-30/5`, `10/5`), month and weekday names, weekday 7 = Sunday, `L` in
day-of-month (last day), `<weekday>#<n>` (n-th weekday of the month) and `<weekday>L` (the last one),
and the nicknames @yearly @annually @monthly @weekly @daily @midnight @hourly. As croner by default,
when both day-of-month and day-of-week are restricted a day matching either one fires.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {name.upper(): n for n, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
_SEARCH_DAYS = 366 * 8  # Feb 29 on a given weekday can be years away
# A field's number is at most a few ASCII digits: str.isdigit() also takes '²' or '٣' (which int() then
# refuses or reads as 3), and int() of thousands of digits raises; both must be a message, not a traceback.
_MAX_DIGITS = 4
MAX_EXPRESSION = 1024  # characters of one cron expression: a real one is a few dozen


def _digits(text: str) -> int | None:
    """The value of a short run of ASCII digits, else None."""
    if not text or len(text) > _MAX_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return int(text)


class CronError(ValueError):
    pass


def _shown(text: str) -> str:
    """A piece of the expression as a message quotes it: short, escaped (it came from a hand-edited file)."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _number(text: str, names: dict[str, int], lo: int, hi: int, field: str) -> int:
    value = names.get(text.upper()) if names else None
    if value is None:
        value = _digits(text)
        if value is None:
            raise CronError(f"{field}: {_shown(text)} is not a number{' or a name' if names else ''}")
    if not lo <= value <= hi:
        raise CronError(f"{field}: {value} is outside {lo}-{hi}")
    return value


def _field(text: str, lo: int, hi: int, field: str, names: dict[str, int] | None = None) -> set[int]:
    out: set[int] = set()
    for item in text.split(","):
        if not item:
            raise CronError(f"{field}: empty list item in {_shown(text)}")
        base, _, step_text = item.partition("/")
        step = 1
        if step_text:
            value = _digits(step_text)
            if value is None or value < 1:
                raise CronError(f"{field}: step {_shown(step_text)} must be a whole number >= 1")
            step = value
        if base in ("*", "?"):
            start, end = lo, hi
        elif "-" in base:
            a, _, b = base.partition("-")
            start, end = _number(a, names or {}, lo, hi, field), _number(b, names or {}, lo, hi, field)
            if start > end:
                raise CronError(f"{field}: range {_shown(base)} runs backwards")
        else:
            start = _number(base, names or {}, lo, hi, field)
            end = hi if step_text else start
        out.update(range(start, end + 1, step))
    return out


@dataclass(frozen=True)
class CronExpr:
    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    last_day: bool
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    nth: frozenset[tuple[int, int]]  # (weekday, n); n = -1 for the last one of the month
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, text: str) -> CronExpr:
        if len(text) > MAX_EXPRESSION:
            raise CronError(f"the expression is {len(text)} characters long; at most {MAX_EXPRESSION} are read")
        expr = _NICKNAMES.get(text.strip().lower(), text.strip())
        parts = expr.split()
        if len(parts) == 5:
            parts = ["0", *parts]
        if len(parts) != 6:
            raise CronError(f"{_shown(text)} needs 5 fields (minute hour day month weekday) or 6 (seconds first)")
        sec, minute, hour, dom, month, dow = parts
        last_day = False
        dom_items = []
        for item in dom.split(","):
            if item.upper() == "L":
                last_day = True
            else:
                dom_items.append(item)
        days = _field(",".join(dom_items), 1, 31, "day of month") if dom_items else set()
        weekdays: set[int] = set()
        nth: set[tuple[int, int]] = set()
        for item in dow.split(","):
            upper = item.upper()
            if "#" in upper:
                day, _, n = upper.partition("#")
                count = _digits(n)
                if count is None or not 1 <= count <= 5:
                    raise CronError(f"day of week: {_shown(item)} needs #1 to #5")
                nth.add((_number(day, _DAYS, 0, 7, "day of week") % 7, count))
            elif upper.endswith("L") and len(upper) > 1:
                nth.add((_number(upper[:-1], _DAYS, 0, 7, "day of week") % 7, -1))
            else:
                weekdays.update(v % 7 for v in _field(item, 0, 7, "day of week", _DAYS))
        return cls(
            text,
            frozenset(_field(sec, 0, 59, "seconds")),
            frozenset(_field(minute, 0, 59, "minute")),
            frozenset(_field(hour, 0, 23, "hour")),
            frozenset(days),
            last_day,
            frozenset(_field(month, 1, 12, "month", _MONTHS)),
            frozenset(weekdays),
            frozenset(nth),
            dom.strip() not in ("*", "?"),
            dow.strip() not in ("*", "?"),
        )

    def _day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        last = calendar.monthrange(d.year, d.month)[1]
        by_dom = d.day in self.days or (self.last_day and d.day == last)
        weekday = (d.weekday() + 1) % 7
        by_dow = weekday in self.weekdays or any(
            day == weekday and ((d.day - 1) // 7 + 1 == n if n > 0 else d.day + 7 > last) for day, n in self.nth
        )
        if self.days_restricted and self.weekdays_restricted:
            return by_dom or by_dow
        if self.days_restricted:
            return by_dom
        if self.weekdays_restricted:
            return by_dow
        return True

    def next_after(self, after: datetime) -> datetime | None:
        """The first matching local time strictly after `after` (aware), or None within eight years."""
        local = after.astimezone()
        start = local.replace(tzinfo=None, microsecond=0) + timedelta(seconds=1)
        day = start.date()
        last = day + timedelta(days=_SEARCH_DAYS)
        while day <= last:
            if day.month not in self.months:  # a month at a time: "Feb 30" gives up after 8 Februaries, not 2,922 days
                day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
                continue
            if self._day_matches(day):
                first = start if day == start.date() else datetime(day.year, day.month, day.day)
                found = self._time_on(day, first)
                if found is not None:
                    return found.astimezone()  # naive local -> aware local
            day += timedelta(days=1)
        return None

    def _time_on(self, day: date, earliest: datetime) -> datetime | None:
        for hour in sorted(self.hours):
            for minute in sorted(self.minutes):
                for second in sorted(self.seconds):
                    candidate = datetime(day.year, day.month, day.day, hour, minute, second)
                    if candidate >= earliest:
                        return candidate
        return None
