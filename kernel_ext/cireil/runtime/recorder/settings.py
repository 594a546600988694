"""The recorder's part of cireil's own settings file, `config/cireil.toml` ([recording] and [prices]).

The file is parsed by runtime/config/cireil_config.py (the engine reads its [limits] from there too); here
it becomes the recorder's settings, and any problem in the file stops recording with every issue named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config.cireil_config import CIREIL_FILE, Price, load_cireil_config
from ..config.cireil_config import CireilConfigError as SettingsError

SETTINGS_FILE = CIREIL_FILE

__all__ = ["SETTINGS_FILE", "Price", "RecorderSettings", "SettingsError", "load_settings"]


@dataclass
class RecorderSettings:
    enabled: bool = True
    max_turns: int = 1000
    max_bytes: int = 256 * 2**20
    prices: dict[str, Price] = field(default_factory=dict)


def load_settings(agent_dir: Path) -> RecorderSettings:
    """The settings, defaults where the file or a key is absent; SettingsError for a bad file."""
    config = load_cireil_config(agent_dir)
    return RecorderSettings(config.enabled, config.max_turns, config.max_bytes, dict(config.prices))
