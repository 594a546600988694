"""config/heartbeat.toml (upstream-formats §3.5): what a pulse is and when it may run.

A pulse runs every `interval` seconds (the first one interval after the start) inside its target
session, only within `activeHours` (HH:MM in an IANA zone; a window may wrap midnight; end "00:00"
is the end of the day; an unknown zone lets the pulse run), only when tasks/HEARTBEAT.md has content,
and never while another turn runs. Its prompt is not kept in the history. A reply of exactly
HEARTBEAT_OK is shown only with `showOk`, any other only with `showAlerts`. A file the original's schema
refuses (heartbeat_schema) does not pulse at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..base.errors import ConfigIssue
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_toml
from ..files.layout import HEARTBEAT_FILE, TASKS_FILE
from ..files.paths import read_agent_file
from .config import every_problem
from .schema import SECONDS, Report

_HEARTBEAT_KEYS = ("enabled", "interval", "target", "model", "provider", "activeHours", "visibility")
OK_REPLY = "HEARTBEAT_OK"
# cireil's wording (the original's prompt text is not part of the shared formats)
PROMPT = (
    "Heartbeat: read /tasks/HEARTBEAT.md and do what it asks now. If nothing needs attention, respond with "
    f"exactly {OK_REPLY}."
)


@dataclass(frozen=True)
class Heartbeat:
    enabled: bool = False
    interval: int = 1800
    target: str = "last"
    model: str | None = None
    provider: str | None = None
    start: str | None = None  # activeHours
    end: str | None = None
    timezone: str | None = None
    show_alerts: bool = True
    show_ok: bool = False

    @property
    def hours_text(self) -> str:
        return f"{self.start}–{self.end} {self.timezone}" if self.start else "any time"

    def active(self, now: datetime) -> bool:
        if self.start is None or self.end is None:
            return True
        try:
            from zoneinfo import ZoneInfo

            local = now.astimezone(ZoneInfo(self.timezone or "UTC"))
        except (KeyError, ValueError, OSError):  # an unknown zone: the original lets the pulse run
            return True
        minute = local.hour * 60 + local.minute
        start, end = _minutes(self.start), _minutes(self.end)
        if start is None or end is None:
            return True
        end = 24 * 60 if end == 0 else end
        return start <= minute < end if start < end else minute >= start or minute < end


def _minutes(text: str) -> int | None:
    hours, _, minutes = text.partition(":")
    # ASCII and short: isdigit() also takes '²' (which int() refuses) and int() refuses thousands of digits
    if not all(p.isascii() and p.isdigit() and len(p) <= 2 for p in (hours, minutes)):
        return None
    if not (int(hours) < 24 and int(minutes) < 60):
        return None
    return int(hours) * 60 + int(minutes)


def load_heartbeat(directory: Path) -> tuple[Heartbeat | None, list[str]]:
    """(the heartbeat, why it does not run): None without a file; a file with any problem runs nothing."""
    try:
        source = read_toml(directory, HEARTBEAT_FILE)
    except (TomlSyntaxError, OSError) as exc:
        return None, [str(exc)]
    if source is None:
        return None, []
    report = Report(source)
    heartbeat_schema(report)
    if report.out:
        return None, [str(i) for i in report.out]
    data = source.data
    too_long = _interval_issue(source)
    if too_long is not None:
        return None, [str(too_long)]
    hours = data.get("activeHours") or {}
    shown = data.get("visibility") or {}
    return (
        Heartbeat(
            enabled=data.get("enabled", False),
            interval=data.get("interval", 1800),
            target=data.get("target", "last"),
            model=data.get("model"),
            provider=data.get("provider"),
            start=hours.get("start"),
            end=hours.get("end"),
            timezone=hours.get("timezone"),
            show_alerts=shown.get("showAlerts", True),
            show_ok=shown.get("showOk", False),
        ),
        [],
    )


def _interval_issue(source: TomlSource) -> ConfigIssue | None:
    interval = source.data.get("interval", 1800)
    too_long = every_problem(interval, "interval") if isinstance(interval, int) else None
    if too_long is None:
        return None
    message = f"{too_long}; the heartbeat does not pulse: give it a shorter interval"
    return source.issue(("interval",), message, "warning")


def interval_issues(directory: Path) -> list[ConfigIssue]:
    """An interval the original takes but cireil cannot wait (dry-run and load say so at its line)."""
    try:
        source = read_toml(directory, HEARTBEAT_FILE)
    except (TomlSyntaxError, OSError):
        return []  # reported with the file's other problems
    if source is None:
        return []
    report = Report(source)
    heartbeat_schema(report)
    issue = None if report.out else _interval_issue(source)
    return [issue] if issue is not None else []


def heartbeat_schema(report: Report) -> None:
    """The original's schema of heartbeat.toml: each problem is one it would refuse the file for."""
    data = report.source.data
    report.unknown(data, _HEARTBEAT_KEYS, ())
    report.flag(data, "enabled", ())
    if "interval" in data:
        report.value(("interval",), data["interval"], SECONDS)
    for key in ("target", "model", "provider"):
        report.text(data, key, ())
    hours = data.get("activeHours")
    if hours is not None:
        if not isinstance(hours, dict):
            report.refuse(("activeHours",), "'activeHours' must be a table {start, end, timezone}")
        else:
            report.unknown(hours, ("start", "end", "timezone"), ("activeHours",))
            for key in ("start", "end", "timezone"):
                report.text(hours, key, ("activeHours",), required=True)
    visibility = data.get("visibility")
    if visibility is not None:
        if not isinstance(visibility, dict):
            report.refuse(("visibility",), "'visibility' must be a table {showAlerts, showOk, useIndicator}")
        else:
            report.unknown(visibility, ("showAlerts", "showOk", "useIndicator"), ("visibility",))
            for key in ("showAlerts", "showOk", "useIndicator"):
                report.flag(visibility, key, ("visibility",))


def tasks_text(directory: Path) -> str:
    try:
        # /tasks is writable from exec: a symlink to a host file must not become the heartbeat's prompt
        return read_agent_file(directory, TASKS_FILE).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""
