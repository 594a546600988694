"""cireil's own settings file, `config/cireil.toml`: the original runtime never reads it.

[recording]
enabled = true          # false: turns are not recorded
max_turns = 1000        # oldest recorded turns are evicted beyond this many
max_mb = 256            # ... or beyond this size of cireil-recordings.db

[prices."model-name"]   # USD per million tokens, for %cireil usage
input = 0.5
output = 1.5
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .. import safefs

SETTINGS_FILE = "config/cireil.toml"


class SettingsError(ValueError):
    """config/cireil.toml cannot be used; the message names the file and what to change."""


@dataclass
class Price:
    input: float  # USD per million prompt tokens
    output: float  # USD per million completion tokens


@dataclass
class RecorderSettings:
    enabled: bool = True
    max_turns: int = 1000
    max_bytes: int = 256 * 2**20
    prices: dict[str, Price] = field(default_factory=dict)


def _number(table: dict, key: str, where: str, *, integer: bool = False) -> float | int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (integer and value != int(value)):
        kind = "a whole number" if integer else "a number"
        raise SettingsError(f"{SETTINGS_FILE}: {where}.{key} must be {kind} >= 0, not {value!r}")
    return int(value) if integer else float(value)


def load_settings(agent_dir: Path) -> RecorderSettings:
    """The settings, defaults where the file or a key is absent; SettingsError for a bad file."""
    path = agent_dir / SETTINGS_FILE
    try:
        raw = safefs.read_host_file(path)  # a FIFO or directory: an error, never a hang
    except FileNotFoundError:
        return RecorderSettings()
    except OSError as exc:
        raise SettingsError(f"{SETTINGS_FILE}: cannot be read ({exc.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{SETTINGS_FILE}: {exc}") from None
    settings = RecorderSettings()
    unknown = sorted(set(data) - {"recording", "prices"})
    if unknown:
        raise SettingsError(f"{SETTINGS_FILE}: unknown table(s) {', '.join(unknown)}; known: recording, prices")
    recording = data.get("recording", {})
    if not isinstance(recording, dict):
        raise SettingsError(f"{SETTINGS_FILE}: recording must be a table")
    unknown = sorted(set(recording) - {"enabled", "max_turns", "max_mb"})
    if unknown:
        raise SettingsError(
            f"{SETTINGS_FILE}: recording.{unknown[0]} is not a setting; known: enabled, max_turns, max_mb"
        )
    if "enabled" in recording:
        if not isinstance(recording["enabled"], bool):
            raise SettingsError(f"{SETTINGS_FILE}: recording.enabled must be true or false")
        settings.enabled = recording["enabled"]
    turns = _number(recording, "max_turns", "recording", integer=True)
    if turns is not None:
        settings.max_turns = max(1, int(turns))
    mb = _number(recording, "max_mb", "recording")
    if mb is not None:
        settings.max_bytes = int(mb * 2**20)
    prices = data.get("prices", {})
    if not isinstance(prices, dict):
        raise SettingsError(f"{SETTINGS_FILE}: prices must be a table of models")
    for model, table in prices.items():
        where = f'prices."{model}"'
        if not isinstance(table, dict):
            raise SettingsError(f"{SETTINGS_FILE}: {where} must be a table with input and output")
        found_in = _number(table, "input", where)
        found_out = _number(table, "output", where)
        if found_in is None or found_out is None:
            raise SettingsError(f"{SETTINGS_FILE}: {where} needs both input and output (USD per million tokens)")
        settings.prices[model] = Price(found_in, found_out)
    return settings
