"""Dates as the agent reads them (reference §7.3): `2026-05-01T12:00:00+02:00 (Friday, CEST) [just now]`.

The zone is the runtime root's `config/system.toml` `timezone` (an IANA name), else the machine's local
zone. Local time is represented by `None` rather than a fixed offset so that dates on the other side of
a daylight-saving change still get their own offset and abbreviation.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..base.errors import ConfigError, ConfigIssue
from ..config.tomlsource import TomlSource, TomlSyntaxError

SYSTEM_FILE = "config/system.toml"
_SYSTEM_KEYS = ("timezone",)
# Spelled out instead of %A: the agent always reads English, whatever the kernel's locale is.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# system.toml is read on every model call; (path, mtime_ns, size) -> zone keeps that to one stat.
_zone_cache: dict[str, tuple[int, int, tzinfo | None]] = {}


def load_timezone(runtime_root: Path | None) -> tzinfo | None:
    """The configured zone, or None for local time. Bad files raise ConfigError naming file and line."""
    if runtime_root is None:
        return None
    path = Path(runtime_root) / SYSTEM_FILE
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    key = str(path)
    cached = _zone_cache.get(key)
    if cached is not None and cached[:2] == (info.st_mtime_ns, info.st_size):
        return cached[2]
    from ..files import safefs

    try:
        raw = safefs.read_host_file(path)  # a FIFO must not hang every turn
    except OSError as exc:
        raise ConfigError([ConfigIssue(key, None, f"cannot be read: {exc.strerror or exc}")]) from None
    zone = parse_system_toml(key, raw)
    _zone_cache[key] = (info.st_mtime_ns, info.st_size, zone)
    return zone


def parse_system_toml(name: str, raw: bytes) -> tzinfo | None:
    """`name` is how errors refer to the file (it lives in the runtime root, not in an agent)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError([ConfigIssue(name, line, "file is not valid UTF-8")]) from None
    try:
        source = TomlSource.parse(name, text)
    except TomlSyntaxError as exc:
        raise ConfigError([exc.issue]) from None
    from ..config.checker import Checker

    check = Checker(source)
    check.unknown(source.data, _SYSTEM_KEYS)
    issues = check.issues
    zone: tzinfo | None = None
    value = source.data.get("timezone")
    if value is not None:
        if not isinstance(value, str) or not value:
            issues.append(source.issue(("timezone",), "timezone must be an IANA zone name such as 'Europe/Berlin'"))
        else:
            try:
                zone = ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError, OSError):
                issues.append(
                    source.issue(
                        ("timezone",), f"unknown timezone {value!r} (expected an IANA name such as 'Europe/Berlin')"
                    )
                )
    if issues:
        raise ConfigError(issues)
    return zone


def _offset(dt: datetime) -> str:
    raw = dt.strftime("%z")  # +0200, or +053000 for historical zones with seconds
    return f"{raw[:3]}:{raw[3:5]}"


def format_datetime(dt: datetime, tz: tzinfo | None) -> str:
    """`YYYY-MM-DDTHH:MM:SS±HH:MM (Weekday, TZ-abbrev)`; naive datetimes are taken as local time."""
    local = dt.astimezone(tz)
    abbrev = local.tzname() or _offset(local)
    return f"{local:%Y-%m-%dT%H:%M:%S}{_offset(local)} ({_WEEKDAYS[local.weekday()]}, {abbrev})"


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def relative_part(dt: datetime, now: datetime) -> str:
    """`[just now]`, `[5 minutes ago]`, `[in 3 days]`: whole units, rounded down."""
    seconds = (dt - now).total_seconds()
    span = abs(seconds)
    if span < 60:
        return "[just now]"
    minutes = int(span // 60)
    if minutes < 60:
        amount = _count(minutes, "minute")
    elif minutes < 24 * 60:
        amount = _count(minutes // 60, "hour")
    elif minutes < 30 * 24 * 60:
        amount = _count(minutes // (24 * 60), "day")
    elif minutes < 365 * 24 * 60:
        amount = _count(minutes // (30 * 24 * 60), "month")
    else:
        amount = _count(minutes // (365 * 24 * 60), "year")
    return f"[in {amount}]" if seconds > 0 else f"[{amount} ago]"


def now_local() -> datetime:
    return datetime.now().astimezone()


def current_date_line(tz: tzinfo | None, now: datetime | None = None) -> str:
    """What follows `Current date: ` in the metadata message."""
    now = now or now_local()
    return f"{format_datetime(now, tz)} {relative_part(now, now)}"


def format_timestamp(iso: str, tz: tzinfo | None, relative: bool = False, *, now: datetime | None = None) -> str:
    """A stored ISO-8601 timestamp as the agent reads dates; tools show it without the relative part."""
    dt = datetime.fromisoformat(iso)
    text = format_datetime(dt, tz)
    if relative:
        if dt.tzinfo is None:
            dt = dt.astimezone()
        text += " " + relative_part(dt, now or now_local())
    return text
