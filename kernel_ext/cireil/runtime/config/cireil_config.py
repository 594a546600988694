"""cireil's own settings file, `config/cireil.toml` (the original runtime never reads it): one parser for the
recorder (above the engine) and the engine (below it), so it lives on the config floor both stand on.

[recording]
enabled = true          # false: turns are not recorded
max_turns = 1000        # oldest recorded turns are evicted beyond this many
max_mb = 256            # ... or beyond this size of cireil-recordings.db

[prices."model-name"]   # USD per million tokens, for %cireil usage
input = 0.5
output = 1.5

[limits]                # what one model provider may send, and how long a turn may go on (LIMITS below)
max_steps = 50

Every problem is reported at once, each with FILE:LINE. A caller that needs only part of the file asks for
that part's problems (`issues_of`): a bad [prices] table stops neither turns nor their limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from ..base import params
from ..base.errors import ConfigError, ConfigIssue
from .checker import Checker, toml_repr
from .tomlsource import TomlSyntaxError, read_toml

CIREIL_FILE = "config/cireil.toml"
SECTIONS = ("recording", "prices", "limits")


class CireilConfigError(ValueError):
    """config/cireil.toml cannot be used; every problem, each with its file and line."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("; ".join(str(i) for i in issues))


@dataclass(frozen=True)
class Limits:
    """Bounds on what a model provider sends and on how long a turn goes on ([limits] of config/cireil.toml).

    Sizes count what arrives after decompression; a reply that passes one ends its model call with an error
    naming the setting (the call is not retried: the same request would meet the same reply)."""

    max_body_mb: float = 32  # one reply body, decoded (a whole JSON reply, or every event of a stream)
    max_event_mb: float = 8  # one Server-Sent Event: its line(s) of data, even before a line end arrives
    max_reply_mb: float = 8  # the text, reasoning and tool-call arguments of one reply, together (characters)
    max_error_kb: float = 16  # read of an error body; the message kept from it is at most 2000 characters
    idle_timeout_s: float = 600  # no byte from the provider for this long
    total_timeout_s: float = 1800  # one model call, from sending the request to the reply's end
    max_steps: int = 50  # model calls in one turn (retries included); the original has no cap
    plugin_timeout_s: float = 600  # one call of a JS plugin's tool (the original's 10 minutes); then its worker ends

    @property
    def body_bytes(self) -> int:
        return int(self.max_body_mb * 2**20)

    @property
    def event_chars(self) -> int:
        return int(self.max_event_mb * 2**20)

    @property
    def reply_chars(self) -> int:
        return int(self.max_reply_mb * 2**20)

    @property
    def error_bytes(self) -> int:
        return int(self.max_error_kb * 2**10)


DEFAULT_LIMITS = Limits()


def setting(name: str) -> str:
    """How a message names a limit's setting: `limits.max_steps in config/cireil.toml`."""
    return f"limits.{name} in {CIREIL_FILE}"


_SIZE = "a number of MB"
LIMIT_FIELDS: dict[str, params.Field] = {
    "max_body_mb": params.Number(minimum=0.001, maximum=4096, default=Limits.max_body_mb, description=_SIZE),
    "max_event_mb": params.Number(minimum=0.001, maximum=4096, default=Limits.max_event_mb, description=_SIZE),
    "max_reply_mb": params.Number(minimum=0.001, maximum=4096, default=Limits.max_reply_mb, description=_SIZE),
    "max_error_kb": params.Number(minimum=1, maximum=2**20, default=Limits.max_error_kb, description="a number of KB"),
    "idle_timeout_s": params.Number(minimum=0.01, maximum=86400, default=Limits.idle_timeout_s),
    "total_timeout_s": params.Number(minimum=0.01, maximum=7 * 86400, default=Limits.total_timeout_s),
    "max_steps": params.Integer(minimum=1, maximum=100_000, default=Limits.max_steps),
    "plugin_timeout_s": params.Number(minimum=0.01, maximum=86400, default=Limits.plugin_timeout_s),
}
assert set(LIMIT_FIELDS) == {f.name for f in fields(Limits)}


@dataclass
class Price:
    input: float  # USD per million prompt tokens
    output: float  # USD per million completion tokens


@dataclass
class CireilConfig:
    enabled: bool = True  # [recording]
    max_turns: int = 1000
    max_bytes: int = 256 * 2**20
    prices: dict[str, Price] = field(default_factory=dict)
    limits: Limits = DEFAULT_LIMITS
    # every problem, each with the section it is in ("" for the file as a whole: syntax, unknown sections)
    problems: list[tuple[str, ConfigIssue]] = field(default_factory=list)

    @property
    def issues(self) -> list[ConfigIssue]:
        return [issue for _, issue in self.problems]

    def issues_of(self, *sections: str) -> list[ConfigIssue]:
        """The problems that make these sections unusable: theirs, and the file's own (it could not be read)."""
        return [issue for where, issue in self.problems if where in sections or where == "file"]


_RECORDING = {
    "enabled": params.Boolean(default=True),
    "max_turns": params.Integer(minimum=0, default=1000),
    "max_mb": params.Number(minimum=0, default=256),
}
_USD = "a number of USD per million tokens"
_PRICE = {"input": params.Number(minimum=0, description=_USD), "output": params.Number(minimum=0, description=_USD)}


def read_cireil_config(agent_dir: Path) -> CireilConfig:
    """The settings, defaults where the file or a key is absent or wrong; `problems` says what was wrong."""
    config = CireilConfig()
    try:
        source = read_toml(agent_dir, CIREIL_FILE)
    except TomlSyntaxError as exc:
        config.problems.append(("file", exc.issue))
        return config
    if source is None:
        return config
    check = Checker(source)

    def part(section: str, start: int) -> None:
        config.problems.extend((section, issue) for issue in check.issues[start:])

    mark = check.mark()
    check.unknown(source.data, SECTIONS)
    part("", mark)

    mark = check.mark()
    recording = check.table(("recording",), source.data.get("recording", {}), _RECORDING) or {}
    config.enabled = recording.get("enabled", True)
    config.max_turns = max(1, int(recording.get("max_turns", 1000)))
    config.max_bytes = int(recording.get("max_mb", 256) * 2**20)
    part("recording", mark)

    mark = check.mark()
    prices = source.data.get("prices", {})
    if not isinstance(prices, dict):
        check.fail(("prices",), f"'prices' must be a table of model tables, not {toml_repr(prices)}")
        prices = {}
    for model, table in prices.items():
        found = check.table(("prices", model), table, _PRICE) or {}
        if "input" in found and "output" in found:
            config.prices[model] = Price(float(found["input"]), float(found["output"]))
    part("prices", mark)

    mark = check.mark()
    limits = check.table(("limits",), source.data.get("limits", {}), LIMIT_FIELDS) or {}
    config.limits = Limits(**limits) if not check.errors_since(mark) else DEFAULT_LIMITS
    part("limits", mark)
    return config


def load_cireil_config(agent_dir: Path) -> CireilConfig:
    """The whole file; CireilConfigError listing every problem when any part is wrong."""
    config = read_cireil_config(agent_dir)
    errors = [issue for issue in config.issues if issue.severity == "error"]
    if errors:
        raise CireilConfigError(config.issues)
    return config


def load_limits(agent_dir: Path) -> Limits:
    """The [limits] a turn runs under; ConfigError (FILE:LINE) when they cannot be known. A wrong limit is
    never replaced by its default silently: a person who lowered one meant it."""
    config = read_cireil_config(agent_dir)
    issues = [i for i in config.issues_of("limits") if i.severity == "error"]
    if issues:
        raise ConfigError(issues)
    return config.limits


def dry_run_issues(agent_dir: Path) -> list[ConfigIssue]:
    """What `cireil dry-run` says of the file: a problem in [limits] (or a file that cannot be read) fails every
    turn, so it is an error; one elsewhere only stops recording, so it is a warning."""
    config = read_cireil_config(agent_dir)
    fatal = config.issues_of("limits")
    return [issue if issue in fatal else replace(issue, severity="warning") for issue in config.issues]
