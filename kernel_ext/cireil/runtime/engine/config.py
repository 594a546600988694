"""config/engine.toml: the model providers an agent's turns talk to (reference §8.1).

Secrets can stay out of the file: `apiKey = { env = "NAME" }` names an environment variable. An unset
variable is not a load error (the notebook may set it later); it fails when a request needs the key,
naming the variable and the line that asked for it.

    [providers.local]
    kind = "openai"                       # the only kind this port speaks
    apiBase = "http://127.0.0.1:8000/v1"
    apiKey = { env = "OPENAI_API_KEY" }   # or "sk-...", or a list of either (rotated on HTTP 429)
    defaultModel = "gpt-4o-mini"
    isGlobalDefault = true                # needed only when there are several providers

    [providers.local.models."gpt-4o-mini"]
    contextWindow = 128000
    reasoning = "low"                     # true | false | "xhigh" | "high" | "medium" | "low" | "minimal" | "none"
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config.tomlsource import TomlSource, TomlSyntaxError, read_toml
from ..errors import CireilError, ConfigError, ConfigIssue

ENGINE_FILE = "config/engine.toml"
DEFAULT_API_KEY = "not-needed"
REASONING_LEVELS = ("xhigh", "high", "medium", "low", "minimal", "none")
_UNSUPPORTED_KINDS = ("anthropic", "openai-codex")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_SEE = "see the engine.toml example in cireil.runtime.engine.config's docstring"
MISSING = (
    "required file is missing; agent turns need a model provider (a minimal one: [providers.local] with "
    'apiBase = "http://127.0.0.1:8000/v1" and defaultModel = "<model>")'
)

_PROVIDER_KEYS = (
    "kind",
    "apiBase",
    "apiKey",
    "defaultModel",
    "isGlobalDefault",
    "maxGenerationRetries",
    "maxTurns",
    "customHeaders",
    "useToolChoiceAuto",
    "availableModels",
    "models",
    # known upstream keys this port does not act on: accepted with a warning so shared files still load
    "useJpegForImages",
    "useFilesApi",
)
_MODEL_KEYS = (
    "contextWindow",
    "contextBudget",
    "contextHardBudget",
    "maxImagesPerRequest",
    "reasoning",
    "reasoningBudget",
    "supportsVision",
    "supportsVideo",
    "toolFailThreshold",
)


class MissingApiKey(CireilError):
    """An apiKey names an environment variable that is not set (raised when a request needs it)."""


@dataclass(frozen=True)
class KeySource:
    """One API key: the literal secret, or the name of the environment variable holding it."""

    value: str | None = field(default=None, repr=False)
    env: str | None = None
    where: str = ENGINE_FILE  # "config/engine.toml:7", for the error when the variable is unset

    def resolve(self, environ: Mapping[str, str] | None = None) -> str:
        if self.env is None:
            return self.value or ""
        environ = os.environ if environ is None else environ
        key = environ.get(self.env)
        if not key:
            raise MissingApiKey(
                f"{self.where}: apiKey names the environment variable {self.env}, which is not set"
                " (set it in the kernel's environment, e.g. os.environ[...] in a cell, then run the turn again)"
            )
        return key

    def describe(self) -> str:
        """For display: never the secret itself."""
        return f"${self.env}" if self.env else ("(literal key)" if self.value != DEFAULT_API_KEY else DEFAULT_API_KEY)


@dataclass(frozen=True)
class ModelConfig:
    context_window: int | None = None
    context_budget: float = 0.6
    context_hard_budget: float = 0.85
    max_images_per_request: int | None = None
    reasoning: bool | str = True
    reasoning_budget: int = 16384
    supports_vision: bool = True
    supports_video: bool = False
    tool_fail_threshold: int = 3


@dataclass
class ProviderConfig:
    name: str
    kind: str = "openai"
    api_base: str = ""
    api_keys: list[KeySource] = field(default_factory=lambda: [KeySource(DEFAULT_API_KEY)])
    default_model: str = ""
    max_generation_retries: int = 2
    max_turns: int = 30
    custom_headers: dict[str, str] = field(default_factory=dict)
    use_tool_choice_auto: bool = False
    models: dict[str, ModelConfig] = field(default_factory=dict)
    available_models: list[str] = field(default_factory=list)

    def model_config(self, name: str) -> ModelConfig:
        """A model not listed under [providers.<name>.models] gets every default."""
        return self.models.get(name) or ModelConfig()


@dataclass
class EngineConfig:
    providers: dict[str, ProviderConfig]
    default: str

    @property
    def default_provider(self) -> ProviderConfig:
        return self.providers[self.default]


def load_engine_config(agent_dir: Path) -> EngineConfig:
    """engine.toml is required for turns; every problem found is raised together as one ConfigError."""
    try:
        source = read_toml(agent_dir, ENGINE_FILE)
    except TomlSyntaxError as exc:
        raise ConfigError([exc.issue]) from None
    if source is None:
        raise ConfigError([ConfigIssue(ENGINE_FILE, None, MISSING)])
    config, issues = parse_engine_config(source)
    if config is None or any(i.severity == "error" for i in issues):
        raise ConfigError(issues)
    return config


def parse_engine_config(source: TomlSource | None) -> tuple[EngineConfig | None, list[ConfigIssue]]:
    if source is None:
        return None, [ConfigIssue(ENGINE_FILE, None, MISSING)]
    issues: list[ConfigIssue] = []
    for key in source.data:
        if key != "providers":
            issues.append(
                _issue(
                    source,
                    (key,),
                    f"unknown key '{key}'{_hint(key, ('providers',))} (expected [providers.<name>] tables)",
                )
            )
    table = source.data.get("providers")
    if table is None:
        issues.append(source.issue((), f"no providers: add a [providers.<name>] table ({_SEE})"))
        return None, issues
    if not isinstance(table, dict):
        issues.append(source.issue(("providers",), "'providers' must be a table of [providers.<name>] tables"))
        return None, issues
    providers: dict[str, ProviderConfig] = {}
    defaults: list[str] = []
    for name, entry in table.items():
        provider = _parse_provider(source, name, entry, issues)
        if provider is not None:
            providers[name] = provider
        if isinstance(entry, dict) and entry.get("isGlobalDefault") is True:
            defaults.append(name)
    if not table:
        issues.append(_issue(source, ("providers",), f"no providers: add a [providers.<name>] table ({_SEE})"))
    default = _pick_default(source, table, defaults, issues)
    if any(i.severity == "error" for i in issues) or default is None:
        return None, issues
    return EngineConfig(providers, default), issues


def _pick_default(source: TomlSource, table: dict, defaults: list[str], issues: list[ConfigIssue]) -> str | None:
    if len(defaults) == 1:
        return defaults[0]
    if len(defaults) > 1:
        for name in defaults[1:]:
            issues.append(
                source.issue(
                    ("providers", name, "isGlobalDefault"),
                    f"only one provider may have isGlobalDefault = true; '{defaults[0]}' already has it",
                )
            )
        return None
    if len(table) == 1:
        return next(iter(table))
    if table:
        issues.append(
            _issue(
                source,
                ("providers",),
                f"{len(table)} providers and none has isGlobalDefault = true; mark exactly one as the default",
            )
        )
    return None


def _issue(source: TomlSource, path: tuple, message: str) -> ConfigIssue:
    """Like source.issue, but a table written only through its subtables ([a.b]) is found at its first one."""
    issue = source.issue(path, message)
    if issue.line is None and path:
        lines = [line for key, line in source.lines.items() if key[: len(path)] == path]
        if lines:
            issue = ConfigIssue(issue.file, min(lines), message, key=issue.key)
    return issue


def _hint(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class _Checker:
    """Type checks for one table; each failure becomes an issue at the key's line."""

    def __init__(self, source: TomlSource, where: tuple, entry: dict, issues: list[ConfigIssue]) -> None:
        self.source, self.where, self.entry, self.issues = source, where, entry, issues
        self.ok = True

    def fail(self, key: str, message: str) -> None:
        self.issues.append(self.source.issue((*self.where, key), message))
        self.ok = False

    def label(self, key: str) -> str:
        return ".".join((*(_quote(p) for p in self.where), key))

    def integer(self, key: str, default: int | None, minimum: int) -> int | None:
        if key not in self.entry:
            return default
        value = self.entry[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.fail(key, f"{self.label(key)} must be a whole number >= {minimum}, not {value!r}")
            return default
        return value

    def fraction(self, key: str, default: float) -> float:
        value = self.entry.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 1:
            self.fail(key, f"{self.label(key)} must be a number in (0, 1], not {value!r}")
            return default
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.entry.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"{self.label(key)} must be true or false, not {value!r}")
            return default
        return value

    def string(self, key: str, *, required: bool) -> str | None:
        value = self.entry.get(key)
        if value is None:
            if required:
                self.fail(key, f"{self.label(key)} is required")
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"{self.label(key)} must be a non-empty string, not {value!r}")
            return None
        return value

    def unknown(self, known: tuple[str, ...], what: str) -> None:
        for key in self.entry:
            if key not in known:
                hint = _hint(key, known) or f" (expected: {', '.join(known)})"
                self.fail(key, f"unknown key '{key}' in {what}{hint}")


def _quote(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else f'"{part}"'


def _parse_provider(source: TomlSource, name: str, entry: Any, issues: list[ConfigIssue]) -> ProviderConfig | None:
    where = ("providers", name)
    if not isinstance(entry, dict):
        issues.append(source.issue(where, f"providers.{_quote(name)} must be a table ([providers.{_quote(name)}])"))
        return None
    check = _Checker(source, where, entry, issues)
    check.unknown(_PROVIDER_KEYS, f"[providers.{_quote(name)}]")

    kind = entry.get("kind", "openai")
    if kind in _UNSUPPORTED_KINDS:
        check.fail("kind", f"provider '{name}': kind '{kind}' is not supported by cireil yet; only 'openai' is")
    elif kind != "openai":
        check.fail("kind", f"provider '{name}': unknown kind {kind!r} (only 'openai' is supported)")

    api_base = check.string("apiBase", required=True)
    if api_base is not None:
        parts = urlsplit(api_base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            check.fail("apiBase", f"provider '{name}': apiBase must be an http:// or https:// URL, not {api_base!r}")

    api_keys = _api_keys(check, name)
    default_model = check.string("defaultModel", required=True)
    check.boolean("isGlobalDefault", False)
    retries = check.integer("maxGenerationRetries", 2, 0)
    max_turns = check.integer("maxTurns", 30, 1)
    auto = check.boolean("useToolChoiceAuto", False)
    headers = _headers(check, name)
    available = entry.get("availableModels", [])
    if not isinstance(available, list) or not all(isinstance(m, str) and m for m in available):
        check.fail("availableModels", f"provider '{name}': availableModels must be a list of model names")
        available = []
    for key in ("useJpegForImages", "useFilesApi"):
        if key in entry:
            issues.append(
                source.issue((*where, key), f"provider '{name}': {key} has no effect in cireil", severity="warning")
            )

    models: dict[str, ModelConfig] = {}
    raw_models = entry.get("models", {})
    if not isinstance(raw_models, dict):
        check.fail("models", f"providers.{_quote(name)}.models must be a table of [providers.{name}.models.<model>]")
    else:
        for model, table in raw_models.items():
            parsed = _parse_model(source, (*where, "models", model), table, issues)
            if parsed is None:
                check.ok = False
            else:
                models[model] = parsed

    if not check.ok:
        return None
    return ProviderConfig(
        name=name,
        kind="openai",
        api_base=api_base or "",
        api_keys=api_keys,
        default_model=default_model or "",
        max_generation_retries=retries if retries is not None else 2,
        max_turns=max_turns if max_turns is not None else 30,
        custom_headers=headers,
        use_tool_choice_auto=auto,
        models=models,
        available_models=list(available),
    )


def _api_keys(check: _Checker, name: str) -> list[KeySource]:
    raw = check.entry.get("apiKey", DEFAULT_API_KEY)
    line = check.source.line_of(*check.where, "apiKey") or check.source.line_of(*check.where)
    where = f"{check.source.rel}:{line}" if line else check.source.rel
    items = raw if isinstance(raw, list) else [raw]
    keys: list[KeySource] = []
    bad = f"provider '{name}': apiKey must be a string, {{ env = \"VARIABLE\" }}, or a list of those"
    if not items:
        check.fail("apiKey", f"{bad}; the list is empty")
        return []
    for item in items:
        if isinstance(item, str) and item:
            keys.append(KeySource(value=item, where=where))
        elif isinstance(item, dict) and set(item) == {"env"} and isinstance(item["env"], str) and item["env"]:
            keys.append(KeySource(env=item["env"], where=where))
        else:
            check.fail(
                "apiKey",
                f"{bad}, not {item!r}"
                if not isinstance(item, dict)
                else f"{bad} (got a table with keys {', '.join(item) or 'none'})",
            )
            return []
    return keys


def _headers(check: _Checker, name: str) -> dict[str, str]:
    headers = check.entry.get("customHeaders", {})
    if not isinstance(headers, dict):
        check.fail("customHeaders", f"provider '{name}': customHeaders must be a table of header = \"value\"")
        return {}
    clean: dict[str, str] = {}
    for header, value in headers.items():
        if not _HEADER_NAME.match(header):
            check.fail("customHeaders", f"provider '{name}': {header!r} is not a valid HTTP header name")
        elif not isinstance(value, str) or "\n" in value or "\r" in value:
            check.fail("customHeaders", f"provider '{name}': header '{header}' must be a one-line string")
        else:
            clean[header] = value
    return clean


def _parse_model(source: TomlSource, where: tuple, table: Any, issues: list[ConfigIssue]) -> ModelConfig | None:
    label = ".".join(_quote(p) for p in where)
    if not isinstance(table, dict):
        issues.append(source.issue(where, f"{label} must be a table ([{label}])"))
        return None
    check = _Checker(source, where, table, issues)
    check.unknown(_MODEL_KEYS, f"[{label}]")
    defaults = ModelConfig()
    window = check.integer("contextWindow", None, 1)
    budget = check.fraction("contextBudget", defaults.context_budget)
    hard = check.fraction("contextHardBudget", defaults.context_hard_budget)
    if check.ok and hard < budget:
        check.fail(
            "contextHardBudget", f"{label}.contextHardBudget ({hard}) must not be below contextBudget ({budget})"
        )
    images = check.integer("maxImagesPerRequest", None, 0)
    reasoning = table.get("reasoning", True)
    if not isinstance(reasoning, bool) and reasoning not in REASONING_LEVELS:
        check.fail(
            "reasoning",
            f"{label}.reasoning must be true, false or one of {', '.join(map(repr, REASONING_LEVELS))}, "
            f"not {reasoning!r}",
        )
    reasoning_budget = check.integer("reasoningBudget", defaults.reasoning_budget, 1)
    vision = check.boolean("supportsVision", defaults.supports_vision)
    video = check.boolean("supportsVideo", defaults.supports_video)
    threshold = check.integer("toolFailThreshold", defaults.tool_fail_threshold, 1)
    if not check.ok:
        return None
    return ModelConfig(
        context_window=window,
        context_budget=budget,
        context_hard_budget=hard,
        max_images_per_request=images,
        reasoning=reasoning,
        reasoning_budget=reasoning_budget or defaults.reasoning_budget,
        supports_vision=vision,
        supports_video=video,
        tool_fail_threshold=threshold or defaults.tool_fail_threshold,
    )
