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

from dataclasses import dataclass, field
from pathlib import Path

from ..base import params
from ..base.errors import ConfigIssue
from ..config.checker import Checker, toml_repr
from ..config.tomlsource import TomlSyntaxError, read_toml

SETTINGS_FILE = "config/cireil.toml"


class SettingsError(ValueError):
    """config/cireil.toml cannot be used; every problem, each with its file and line."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("; ".join(str(i) for i in issues))


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


_RECORDING = {
    "enabled": params.Boolean(default=True),
    "max_turns": params.Integer(minimum=0, default=1000),
    "max_mb": params.Number(minimum=0, default=256),
}
_USD = "a number of USD per million tokens"
_PRICE = {"input": params.Number(minimum=0, description=_USD), "output": params.Number(minimum=0, description=_USD)}


def load_settings(agent_dir: Path) -> RecorderSettings:
    """The settings, defaults where the file or a key is absent; SettingsError for a bad file."""
    try:
        source = read_toml(agent_dir, SETTINGS_FILE)
    except TomlSyntaxError as exc:
        raise SettingsError([exc.issue]) from None
    settings = RecorderSettings()
    if source is None:
        return settings
    check = Checker(source)
    check.unknown(source.data, ("recording", "prices"))
    recording = check.table(("recording",), source.data.get("recording", {}), _RECORDING) or {}
    settings.enabled = recording.get("enabled", True)
    settings.max_turns = max(1, int(recording.get("max_turns", 1000)))
    settings.max_bytes = int(recording.get("max_mb", 256) * 2**20)
    prices = source.data.get("prices", {})
    if not isinstance(prices, dict):
        check.fail(("prices",), f"'prices' must be a table of model tables, not {toml_repr(prices)}")
        prices = {}
    for model, table in prices.items():
        found = check.table(("prices", model), table, _PRICE) or {}
        if "input" in found and "output" in found:
            settings.prices[model] = Price(float(found["input"]), float(found["output"]))
    if check.errors_since(0):
        raise SettingsError(check.issues)
    return settings
