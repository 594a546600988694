"""Dates as the agent reads them (reference §7.3) and the system.toml timezone that governs them."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from cireil.runtime.base.errors import ConfigError
from cireil.runtime.engine.timefmt import (
    current_date_line,
    format_datetime,
    format_timestamp,
    load_timezone,
    relative_part,
)

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 5, 1, 10, 0, 0, tzinfo=UTC)


def test_berlin_zone_exists_here() -> None:
    # the other tests lean on it; say so plainly when the machine lacks tz data
    assert BERLIN.utcoffset(NOW) == timedelta(hours=2)


def test_summer_and_winter_offsets_and_abbreviations() -> None:
    assert format_datetime(NOW, BERLIN) == "2026-05-01T12:00:00+02:00 (Friday, CEST)"
    winter = datetime(2026, 1, 15, 23, 30, 5, tzinfo=UTC)
    assert format_datetime(winter, BERLIN) == "2026-01-16T00:30:05+01:00 (Friday, CET)"
    assert format_datetime(winter, ZoneInfo("America/St_Johns")) == "2026-01-15T20:00:05-03:30 (Thursday, NST)"


def test_current_date_line_is_just_now() -> None:
    assert current_date_line(BERLIN, NOW) == "2026-05-01T12:00:00+02:00 (Friday, CEST) [just now]"


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (timedelta(seconds=0), "[just now]"),
        (timedelta(seconds=-59), "[just now]"),
        (timedelta(seconds=59), "[just now]"),
        (timedelta(seconds=-60), "[1 minute ago]"),
        (timedelta(minutes=-5, seconds=-30), "[5 minutes ago]"),
        (timedelta(minutes=90), "[in 1 hour]"),
        (timedelta(hours=-23, minutes=-59), "[23 hours ago]"),
        (timedelta(days=3, hours=2), "[in 3 days]"),
        (timedelta(days=-1), "[1 day ago]"),
        (timedelta(days=-75), "[2 months ago]"),
        (timedelta(days=800), "[in 2 years]"),
    ],
)
def test_relative_part(delta: timedelta, expected: str) -> None:
    assert relative_part(NOW + delta, NOW) == expected


def test_format_timestamp_absolute_by_default_and_relative_on_request() -> None:
    iso = "2026-04-30T09:15:00+00:00"
    assert format_timestamp(iso, BERLIN) == "2026-04-30T11:15:00+02:00 (Thursday, CEST)"
    assert (
        format_timestamp(iso, BERLIN, relative=True, now=NOW)
        == "2026-04-30T11:15:00+02:00 (Thursday, CEST) [1 day ago]"
    )


@pytest.fixture
def berlin_local(monkeypatch):
    """The process's local zone set to Berlin, restored afterwards."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_without_a_zone_local_time_is_used_with_its_own_dst(berlin_local) -> None:
    assert os.environ["TZ"] == "Europe/Berlin"
    assert format_datetime(NOW, None) == "2026-05-01T12:00:00+02:00 (Friday, CEST)"
    # a date across the DST change keeps its own offset, which a fixed "local offset" would get wrong
    assert format_timestamp("2026-01-10T12:00:00+00:00", None) == "2026-01-10T13:00:00+01:00 (Saturday, CET)"


def _root(tmp_path: Path, text: str | None) -> Path:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    if text is not None:
        (root / "config" / "system.toml").write_text(text)
    return root


def test_no_root_or_no_file_means_local(tmp_path: Path) -> None:
    assert load_timezone(None) is None
    assert load_timezone(_root(tmp_path, None)) is None


def test_configured_zone_and_edits_are_picked_up(tmp_path: Path) -> None:
    root = _root(tmp_path, '# dates for the agent\ntimezone = "Europe/Berlin"\n')
    assert load_timezone(root) == BERLIN
    (root / "config" / "system.toml").write_text('timezone = "Asia/Tokyo"\n')
    assert load_timezone(root) == ZoneInfo("Asia/Tokyo")
    (root / "config" / "system.toml").write_text("# no zone: local time\n")
    assert load_timezone(root) is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('# zone\ntimezone = "Mars/Olympus"\n', 2, "unknown timezone 'Mars/Olympus'"),
        ("\n\ntimezone = 2\n", 3, "IANA zone name"),
        ('timezone = "UTC"\nlocale = "de"\n', 2, "unknown key 'locale'"),
        ('timezone = "../../etc/passwd"\n', 1, "unknown timezone"),
        ('timezone = "Europe/Berlin\n', 1, "invalid TOML"),
    ],
)
def test_bad_system_toml_names_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    root = _root(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_timezone(root)
    message = str(err.value)
    assert f"{root / 'config' / 'system.toml'}:{line}:" in message
    assert words in message
