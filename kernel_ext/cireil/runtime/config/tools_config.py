"""config/tools.toml: which tools are enabled, and the exec table (spec, "Tool configuration")."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..base import params
from ..base.didyoumean import did_you_mean, suggestion
from ..base.errors import ConfigIssue
from ..files.paths import ROOTS, normalize
from .checker import Checker, toml_repr
from .tomlsource import TomlSource

TOOLS_FILE = "config/tools.toml"


@dataclass(frozen=True)
class ExecConfig:
    enabled: bool = False
    timeout: int = 60000
    inline: bool = True
    inlineThresholdBytes: int = 16384
    outputDir: str = "/workspace/.exec-output"
    previewHead: int = 20
    previewTail: int = 20
    maxPreviewLineLength: int = 1000
    hostEnvPassthrough: tuple[str, ...] = ()
    # cireil's own bounds on a hostile command (the original runtime does not know these keys):
    maxOutputBytes: int = 64 * 1024 * 1024  # per call, stdout + stderr saved to files together
    maxProcesses: int = 512  # processes the sandbox may hold at once


def _absolute_inside(path: str) -> str | None:
    if not path.startswith("/"):
        return "must be an absolute sandbox path such as /workspace/.exec-output"
    outside = _outside_sandbox(path)
    return f"{outside}, not {path!r}: spill files must land inside the sandbox" if outside else None


def _names(value: list) -> str | None:
    return None if all(n.strip() for n in value) else "must be a list of non-empty variable names"


# The spec's fields with the bounds a sane configuration keeps.
_EXEC_FIELDS: dict[str, params.Field] = {
    "enabled": params.Boolean(),
    "timeout": params.Integer(minimum=1000, description="a whole number of milliseconds"),
    "inline": params.Boolean(),
    "inlineThresholdBytes": params.Integer(minimum=0),
    "outputDir": params.String(pattern=r"\S", description="a non-empty string", check=_absolute_inside),
    "previewHead": params.Integer(minimum=0),
    "previewTail": params.Integer(minimum=0),
    "maxPreviewLineLength": params.Integer(minimum=1),
    "hostEnvPassthrough": params.Array(
        items=params.String(), description="a list of non-empty variable names", check=_names
    ),
    "maxOutputBytes": params.Integer(minimum=4096),
    "maxProcesses": params.Integer(minimum=8),
}
_BINARIES_HINT = " (the binary allowlist belongs in config/sandbox.toml under [bwrap] binaries)"

REMOVED_TOOLS = {
    "str-replace": "'str-replace' was removed in 2.0 and replaced by 'edit'; "
    "run `cireil migrate <agent-dir>` to update this file (it keeps a backup)",
}
# The spec's 2.0 migration of tools.toml (runtime-behavior.md §10 row 1): `edit` takes str-replace's place and is
# enabled when either tool was. On a runtime root the original CireilClaw shares, it is applied in memory only.
OLD_EDIT, NEW_EDIT = "str-replace", "edit"


@dataclass
class ToolsConfig:
    """Enablement in file order, the exec settings, and the text it was read from."""

    enabled: dict[str, bool] = field(default_factory=dict)
    exec: ExecConfig = field(default_factory=ExecConfig)

    @property
    def enabled_names(self) -> list[str]:
        return [name for name, on in self.enabled.items() if on]


def _parse_exec(check: Checker, value: Any) -> ExecConfig:
    if isinstance(value, bool):
        return ExecConfig(enabled=value)
    if not isinstance(value, dict):
        check.fail(("exec",), f"'exec' must be true, false or a table, not {toml_repr(value)}")
        return ExecConfig()
    check.unknown(value, list(_EXEC_FIELDS), ("exec",), binaries=_BINARIES_HINT)
    settings: dict[str, Any] = {}
    for key, spec in _EXEC_FIELDS.items():
        if key in value:
            ok, item = check.value(("exec", key), value[key], spec)
            if ok:
                settings[key] = tuple(item) if key == "hostEnvPassthrough" else item
    return ExecConfig(**settings)


def _outside_sandbox(path: str) -> str | None:
    """Why a sandbox path lies outside the sandbox roots, judged as resolve() does; None when inside."""
    raw_root = next((seg for seg in path.split("/") if seg not in ("", ".")), "")
    root = normalize(path).lstrip("/").split("/", 1)[0]
    if root not in ROOTS:
        return "must be under " + ", ".join(f"/{r}" for r in ROOTS)
    if raw_root != root:
        return f"leaves /{raw_root} by '..'"
    return None


def parse_tools_config(
    source: TomlSource, known: Collection[str], mcp_servers: Collection[str] = (), *, shared_root: bool = False
) -> tuple[ToolsConfig, list[ConfigIssue]]:
    """Validate tools.toml against the names this agent knows (`known`): built-in, Python, plugin, MCP.

    `shared_root`: the agent sits in a runtime root (`<root>/agents/<slug>/`) that the original CireilClaw may
    run. There `str-replace` is read as the spec's migration makes it (`edit`, on when either was) and the file
    is left alone, since the original still registers str-replace and its own `init` writes it; elsewhere it is
    refused with a pointer to `cireil migrate`.
    """
    check = Checker(source)
    config = ToolsConfig()
    old_at: int | None = None  # where str-replace stood among the enabled names, for an `edit` taking its place
    for name, value in source.data.items():
        where = (name,)
        if name == "exec":
            config.exec = _parse_exec(check, value)
            config.enabled["exec"] = config.exec.enabled
        elif name == OLD_EDIT and shared_root:
            # the original takes only true or false here too (its schema: one boolean per tool but exec)
            if check.value(where, value, params.Boolean())[0]:
                old_at = len(config.enabled)
        elif name in REMOVED_TOOLS:
            check.fail(where, REMOVED_TOOLS[name])
        elif name not in known:
            check.unknown_issue(where, lambda name=name: _unknown_message(name, known, mcp_servers))
        elif check.value(where, value, params.Boolean())[0]:
            config.enabled[name] = value
    if old_at is not None:
        _edit_in_memory(check, config, old_at)
    issues = check.issues
    issues.sort(key=lambda i: i.line or 0)  # in file order, as an editor shows them
    return config, issues


def _edit_in_memory(check: Checker, config: ToolsConfig, old_at: int) -> None:
    """str-replace -> edit as `cireil migrate` writes it, in `config` only: an `edit` line keeps its place and is
    enabled when either is; without one, `edit` takes str-replace's place and value. Said once, at its line."""
    source = check.source
    old = source.data[OLD_EDIT]
    has_edit = NEW_EDIT in source.data
    if has_edit and NEW_EDIT not in config.enabled:
        return  # `edit` itself is wrong: that error is reported, and nothing is guessed
    if has_edit:
        result = config.enabled[NEW_EDIT] or old
        config.enabled[NEW_EDIT] = result
        beside = f" together with 'edit = {_toml(source.data[NEW_EDIT])}' (line {source.line_of(NEW_EDIT)})"
    else:
        result = old
        names = list(config.enabled.items())
        names.insert(old_at, (NEW_EDIT, old))
        config.enabled = dict(names)
        beside = ""
    check.warn(
        (OLD_EDIT,),
        f"'str-replace = {_toml(old)}'{beside} is read as 'edit = {_toml(result)}' (CireilClaw 2.0 replaced "
        "str-replace by edit, which is on when either was); this file is left as it is because the original "
        "CireilClaw sharing this runtime root still registers str-replace and would lose it. To rewrite the file "
        "anyway: `cireil migrate <agent-dir>` (it keeps a backup in the root's config/backups/)",
    )


def _toml(value: bool) -> str:
    return "true" if value else "false"


def _unknown_message(name: str, known: Collection[str], mcp_servers: Collection[str]) -> str:
    if name.startswith("mcp__"):
        server = name[5:].split("__", 1)[0]
        if server not in mcp_servers:
            return f"unknown tool '{name}': there is no server '{server}' in config/mcp.toml"
        prefix = f"mcp__{server}__"  # compared without it: the shared prefix alone would look alike
        close = did_you_mean(name[len(prefix) :], [k[len(prefix) :] for k in known if k.startswith(prefix)])
        hint = f" (did you mean '{prefix}{close}'?)" if close else ""
        return f"unknown tool '{name}': server '{server}' does not advertise it{hint}"
    return f"unknown tool '{name}'{suggestion(name, known)}"
