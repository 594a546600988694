"""config/engine.toml: the model providers an agent's turns talk to, in the original CireilClaw's shape.

Every top-level table is a provider (upstream-formats.md §2); exactly one has `isGlobalDefault = true`.
Per-model settings nest under the provider; model names with `.`, `/` or `:` are quoted keys:

    [local]
    kind = "openai"                       # or "anthropic", or "openai-codex" (OAuth login: engine/codex_auth.py)
    apiBase = "http://127.0.0.1:8000/v1"
    apiKey = "sk-..."                     # or a list of keys (a pool: round-robin, 429 benches a key 30 min)
    defaultModel = "gpt-4o-mini"
    isGlobalDefault = true

    [local.models."gpt-4o-mini"]
    contextWindow = 128000
    reasoning = "low"                     # true | false | "xhigh" | "high" | "medium" | "low" | "minimal" | "none"

cireil's one extension: `apiKey = { env = "NAME" }` (alone or inside the list) names an environment
variable, so no secret lives in the file. The original does not read it. An unset variable is not a
load error (the notebook may set it later); it fails when a request needs the key, naming the variable
and the line that asked for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base import params
from ..base.errors import CireilError, ConfigError, ConfigIssue
from ..base.secrets import SECRETS, dataclass_repr
from .checker import Checker, header_name_ok, label, toml_repr
from .tomlsource import TomlSource, TomlSyntaxError, read_toml
from .urlcheck import url_message

ENGINE_FILE = "config/engine.toml"
DEFAULT_API_KEY = "not-needed"
REASONING_LEVELS = ("xhigh", "high", "medium", "low", "minimal", "none")
KINDS = ("openai", "anthropic", "openai-codex")
SPOKEN_KINDS = ("openai", "anthropic", "openai-codex")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MIGRATE = "run `cireil migrate DIR` to rewrite it (comments kept, a backup first)"
MISSING = (
    "required file is missing; agent turns need a model provider (a minimal one: a [local] table with "
    'apiBase = "http://127.0.0.1:8000/v1", defaultModel = "<model>" and isGlobalDefault = true)'
)

_PROVIDER_KEYS = (
    "apiBase",
    "apiKey",
    "authId",
    "availableModels",
    "customHeaders",
    "defaultModel",
    "isGlobalDefault",
    "kind",
    "maxGenerationRetries",
    "maxTurns",
    "models",
    "useFilesApi",
    "useJpegForImages",
    "useToolChoiceAuto",
)
_MODEL_KEYS = (
    "contextBudget",
    "contextHardBudget",
    "contextWindow",
    "maxImagesPerRequest",
    "reasoning",
    "reasoningBudget",
    "supportsVideo",
    "supportsVision",
    "toolFailThreshold",
)


class MissingApiKey(CireilError):
    """An apiKey names an environment variable that is not set (raised when a request needs it)."""


@dataclass(frozen=True)
class KeySource:
    """One API key: the literal secret, or the name of the environment variable holding it."""

    value: str | None = field(default=None, repr=False)
    env: str | None = None
    where: str = field(default=ENGINE_FILE, compare=False)  # "config/engine.toml:7", for the unset-variable error

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
    custom_headers: dict[str, str | list[str]] = field(default_factory=dict)
    use_tool_choice_auto: bool = False
    models: dict[str, ModelConfig] = field(default_factory=dict)
    available_models: list[str] | str = "analyze"
    auth_id: str = "default"
    is_global_default: bool = False
    use_jpeg_for_images: bool = False
    use_files_api: str | bool = False
    line: int | None = field(default=None, compare=False)  # of its kind (or its table), for turn-time errors

    def __repr__(self) -> str:  # customHeaders values and apiBase credentials are secrets
        return dataclass_repr(self, ("custom_headers",))

    def model_config(self, name: str) -> ModelConfig:
        """This provider's [<provider>.models.<name>] table; built-in defaults when there is none."""
        return self.models.get(name) or ModelConfig()

    def unsupported(self) -> str | None:
        """Why a turn cannot use this provider in cireil, or None when it can."""
        if self.kind in SPOKEN_KINDS:
            return None
        return (
            f"provider '{self.name}' has kind = \"{self.kind}\", which cireil does not support yet "
            f"(it speaks only {', '.join(repr(k) for k in SPOKEN_KINDS)}); the original CireilClaw runs it. "
            "Choose another provider for this turn (--provider NAME) or as isGlobalDefault"
        )


@dataclass(frozen=True)
class Choice:
    """What a turn talks to (upstream-formats.md §2.9) and how each part was chosen."""

    provider: ProviderConfig
    model: str
    model_cfg: ModelConfig
    notices: list[str]


@dataclass
class EngineConfig:
    providers: dict[str, ProviderConfig]
    default: str

    @property
    def default_provider(self) -> ProviderConfig:
        return self.providers[self.default]

    def choose(
        self,
        provider: str | None = None,
        model: str | None = None,
        *,
        selected_provider: str | None = None,
        selected_model: str | None = None,
    ) -> Choice:
        """The original's choice: provider = override, then the session's, then the default; model =
        override, then the session's, then the DEFAULT provider's defaultModel; model table = the chosen
        provider's entry for that model, then the default provider's entry for its own defaultModel, then
        the built-in defaults."""
        notices: list[str] = []
        default = self.default_provider
        name = provider or selected_provider or self.default
        if name not in self.providers:
            notices.append(f"provider '{name}' is not in {ENGINE_FILE}; using the default provider '{self.default}'")
            name = self.default
        chosen = self.providers[name]
        model_name = model or selected_model or default.default_model
        if not (model or selected_model) and chosen is not default and model_name != chosen.default_model:
            notices.append(
                f"model '{model_name}' is the default provider's defaultModel, as the original picks it when no "
                f"model is chosen; pass --model {chosen.default_model} for the default of '{chosen.name}'"
            )
        cfg = chosen.models.get(model_name) or default.models.get(default.default_model) or ModelConfig()
        return Choice(chosen, model_name, cfg, notices)


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


def is_old_layout(data: dict) -> bool:
    """cireil's former `[providers.<name>]` wrapper: a `providers` table holding only tables, none a provider key."""
    table = data.get("providers")
    return (
        isinstance(table, dict)
        and bool(table)
        and all(isinstance(v, dict) for v in table.values())
        and not any(k in _PROVIDER_KEYS for k in table)
    )


def parse_engine_config(source: TomlSource | None) -> tuple[EngineConfig | None, list[ConfigIssue]]:
    if source is None:
        return None, [ConfigIssue(ENGINE_FILE, None, MISSING)]
    check = Checker(source)
    data = source.data
    if is_old_layout(data):
        names = ", ".join(f"[{label(n)}]" for n in data["providers"])
        check.fail(
            ("providers",),
            "this is cireil's old [providers.<name>] layout, which the original CireilClaw does not read: "
            f"providers are top-level tables ({names}); {_MIGRATE}",
        )
        return None, check.issues
    providers: dict[str, ProviderConfig] = {}
    for name, entry in data.items():
        provider = _parse_provider(check, name, entry)
        if provider is not None:
            providers[name] = provider
    if not data:
        check.issues.append(
            ConfigIssue(source.rel, None, "no providers: add a provider table such as [local] (see the README)")
        )
    default = _pick_default(check, data)
    if check.errors_since(0) or default is None:
        return None, check.issues
    return EngineConfig(providers, default), check.issues


def _pick_default(check: Checker, data: dict) -> str | None:
    defaults = [n for n, e in data.items() if isinstance(e, dict) and e.get("isGlobalDefault") is True]
    if len(defaults) == 1:
        return defaults[0]
    if len(defaults) > 1:
        for name in defaults[1:]:
            check.fail(
                (name, "isGlobalDefault"),
                f"there is more than 1 global default provider: '{defaults[0]}' already has "
                "isGlobalDefault = true; assign only one provider the 'isGlobalDefault' tag",
            )
        return None
    if data:
        first = next(iter(data))
        check.fail(
            (first,),
            "there is no global default provider: assign exactly one provider the 'isGlobalDefault' tag "
            f"(isGlobalDefault = true), e.g. in [{label(first)}]",
        )
    return None


class _Table:
    """One provider or model table: its keys read through the shared checker; `ok` while none failed."""

    def __init__(self, check: Checker, where: tuple, entry: dict) -> None:
        self.check, self.where, self.entry = check, where, entry
        self.source = check.source
        self._mark = check.mark()

    @property
    def ok(self) -> bool:
        return not self.check.errors_since(self._mark)

    def label(self, key: str) -> str:
        return f"'{label(*self.where, key)}'"

    def fail(self, key: str, message: str) -> None:
        self.check.fail((*self.where, key), f"{self.label(key)} {message}")

    def warn(self, key: str, message: str) -> None:
        self.check.warn((*self.where, key), f"{self.label(key)} {message}")

    def get(self, key: str, spec: params.Field) -> Any:
        """The key's clean value; its default when absent or wrong (the wrong one is an issue)."""
        if key not in self.entry:
            if spec.is_required:
                self.fail(key, "is required")
            return spec.default if spec.has_default else None
        ok, value = self.check.value((*self.where, key), self.entry[key], spec)
        return value if ok else (spec.default if spec.has_default else None)


_NAME = params.String(min_length=1)
_REASONING = params.AnyOf(
    options=(params.Boolean(), params.String(enum=REASONING_LEVELS)),
    default=True,
    description="true, false or one of " + ", ".join(f"'{r}'" for r in REASONING_LEVELS),
)
_FRACTION = params.Number(minimum=0.1, maximum=1)


def _parse_provider(check: Checker, name: str, entry: Any) -> ProviderConfig | None:
    source = check.source
    where = (name,)
    if not isinstance(entry, dict):
        check.fail(
            where,
            f"'{name}' must be a provider table ([{label(name)}] with apiBase and defaultModel): the top level "
            f"of {ENGINE_FILE} holds only provider tables, not {type(entry).__name__} values",
        )
        return None
    table = _Table(check, where, entry)
    if not name:
        check.fail(where, 'a provider name must not be empty ([""])')
    check.unknown(entry, _PROVIDER_KEYS, where)

    kind = entry.get("kind", "openai")
    if kind not in KINDS:
        hint = ' (renamed to "anthropic" upstream)' if kind == "anthropic-oauth" else ""
        table.fail("kind", f"must be one of {', '.join(map(repr, KINDS))}, not {toml_repr(kind)}{hint}")
    line = source.first_line_within(*where, "kind") if "kind" in entry else source.first_line_within(*where)
    api_base = table.get("apiBase", _NAME) or ""
    if api_base:
        problem = url_message(api_base, whole=True)
        if problem:
            table.fail("apiBase", problem)
    api_keys = _api_keys(table)
    auth_id = table.get("authId", params.String(min_length=1, default="default"))
    available = _available_models(table)
    headers = _headers(table)
    default_model = table.get("defaultModel", _NAME) or ""
    is_default = table.get("isGlobalDefault", params.Boolean(default=False))
    retries = table.get("maxGenerationRetries", params.Integer(minimum=0, default=2))
    max_turns = table.get("maxTurns", params.Integer(minimum=1, default=30))
    files_api = entry.get("useFilesApi", False)
    if files_api not in (False, "kimi"):
        table.fail("useFilesApi", f'must be "kimi" or false, not {toml_repr(files_api)}')
    elif files_api == "kimi":
        table.warn("useFilesApi", "has no effect in cireil (videos are sent inline)")
    jpeg = table.get("useJpegForImages", params.Boolean(default=False))
    auto = table.get("useToolChoiceAuto", params.Boolean(default=False))

    models: dict[str, ModelConfig] = {}
    raw_models = entry.get("models", {})
    if not isinstance(raw_models, dict):
        table.fail("models", f"must hold model tables ([{label(name, 'models', '<model>')}])")
    else:
        for model, model_table in raw_models.items():
            if not model:
                table.fail("models", 'a model name must not be empty ("")')
                continue
            parsed = _parse_model(check, (*where, "models", model), model_table)
            if parsed is not None:
                models[model] = parsed

    register_secrets(api_base, api_keys, headers)
    if not table.ok:
        return None
    return ProviderConfig(
        name=name,
        kind=kind,
        api_base=api_base,
        api_keys=api_keys,
        default_model=default_model,
        max_generation_retries=retries,
        max_turns=max_turns,
        custom_headers=headers,
        use_tool_choice_auto=auto,
        models=models,
        available_models=available,
        auth_id=auth_id,
        is_global_default=is_default,
        use_jpeg_for_images=jpeg,
        use_files_api=files_api,
        line=line,
    )


def register_secrets(api_base: str, keys: list[KeySource], headers: Mapping[str, str | list[str]]) -> None:
    """What a provider table holds that must never be shown or stored: masked from here on (base/secrets.py)."""
    SECRETS.add_url(api_base)
    for key in keys:
        SECRETS.add(key.value)
        if key.env:  # set now or later: a request registers it again when it reads the variable
            SECRETS.add(os.environ.get(key.env))
    for value in headers.values():
        SECRETS.add_all(value if isinstance(value, list) else [value])


def _api_keys(table: _Table) -> list[KeySource]:
    raw = table.entry.get("apiKey", DEFAULT_API_KEY)
    line = table.source.line_of(*table.where, "apiKey") or table.source.line_of(*table.where)
    where = f"{table.source.rel}:{line}" if line else table.source.rel
    items = raw if isinstance(raw, list) else [raw]
    keys: list[KeySource] = []
    if not items:
        table.fail("apiKey", "must list at least one key, not []")
        return []
    for item in items:
        if isinstance(item, str) and item:
            keys.append(KeySource(value=item, where=where))
        elif isinstance(item, dict) and set(item) == {"env"} and isinstance(item["env"], str) and item["env"]:
            keys.append(KeySource(env=item["env"], where=where))
        else:
            got = f"a table with keys {', '.join(item) or 'none'}" if isinstance(item, dict) else toml_repr(item)
            table.fail(
                "apiKey",
                f'must be a non-empty string, a list of them, or {{ env = "VARIABLE" }} (cireil only), not {got}',
            )
            return []
    return keys


def _available_models(table: _Table) -> list[str] | str:
    value = table.entry.get("availableModels", "analyze")
    if value == "analyze":
        return value
    if not isinstance(value, list) or not value or not all(isinstance(m, str) and m for m in value):
        shown = "[]" if value == [] else toml_repr(value)
        table.fail("availableModels", f'must be "analyze" or a non-empty list of model names, not {shown}')
        return "analyze"
    return list(value)


def _headers(table: _Table) -> dict[str, str | list[str]]:
    headers = table.entry.get("customHeaders", {})
    if not isinstance(headers, dict):
        table.fail(
            "customHeaders", f'must be a table of Header = "value" (or a list of values), not {toml_repr(headers)}'
        )
        return {}
    clean: dict[str, str | list[str]] = {}
    for header, value in headers.items():
        values = value if isinstance(value, list) else [value]
        path = (*table.where, "customHeaders", header)
        if not header_name_ok(header):
            table.check.fail(path, f"'{label(*path)}' is not a valid header name")
        elif not values or not all(isinstance(v, str) and v and not _CONTROL.search(v) for v in values):
            table.check.fail(path, f"'{label(*path)}' must be a non-empty one-line string or a non-empty list of them")
        else:
            clean[header] = value
    return clean


def _parse_model(check: Checker, where: tuple, raw: Any) -> ModelConfig | None:
    if not isinstance(raw, dict):
        check.fail(where, f"'{label(*where)}' must be a model table ([{label(*where)}]), not {toml_repr(raw)}")
        return None
    table = _Table(check, where, raw)
    check.unknown(raw, _MODEL_KEYS, where)
    defaults = ModelConfig()
    window: int | None = None
    if "contextWindow" in raw:
        value = raw["contextWindow"]
        if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
            table.fail("contextWindow", f"must be a number of tokens, not {toml_repr(value)}")
        elif value < 1:
            table.warn("contextWindow", f"= {value!r} is ignored: no context fits in it")
        else:
            window = int(value)
    budget = table.get("contextBudget", replace(_FRACTION, default=defaults.context_budget))
    hard = table.get("contextHardBudget", replace(_FRACTION, default=defaults.context_hard_budget))
    if table.ok and hard < budget:
        table.warn("contextHardBudget", f"({hard}) is below contextBudget ({budget}): every prune overshoots")
    images = table.get("maxImagesPerRequest", params.Integer(minimum=1, required=False))
    reasoning = table.get("reasoning", _REASONING)
    reasoning_budget = table.get("reasoningBudget", params.Integer(minimum=0, default=defaults.reasoning_budget))
    vision = table.get("supportsVision", params.Boolean(default=defaults.supports_vision))
    video = table.get("supportsVideo", params.Boolean(default=defaults.supports_video))
    threshold = table.get("toolFailThreshold", params.Integer(minimum=1, default=defaults.tool_fail_threshold))
    if not table.ok:
        return None
    return ModelConfig(
        context_window=window,
        context_budget=float(budget),
        context_hard_budget=float(hard),
        max_images_per_request=images,
        reasoning=reasoning,
        reasoning_budget=reasoning_budget,
        supports_vision=vision,
        supports_video=video,
        tool_fail_threshold=threshold,
    )
