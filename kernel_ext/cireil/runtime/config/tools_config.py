"""config/tools.toml: which tools are enabled, and the exec table (spec, "Tool configuration")."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigIssue
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


# key -> (kind, minimum): the spec's fields with the bounds a sane configuration keeps.
_EXEC_FIELDS: dict[str, tuple[str, int | None]] = {
    "enabled": ("bool", None),
    "timeout": ("int", 1000),
    "inline": ("bool", None),
    "inlineThresholdBytes": ("int", 0),
    "outputDir": ("str", None),
    "previewHead": ("int", 0),
    "previewTail": ("int", 0),
    "maxPreviewLineLength": ("int", 1),
    "hostEnvPassthrough": ("names", None),
    "maxOutputBytes": ("int", 4096),
    "maxProcesses": ("int", 8),
}

REMOVED_TOOLS = {
    "str-replace": "'str-replace' was removed in 2.0 and replaced by 'edit'; "
    "run `cireil migrate <agent-dir>` to update this file (it keeps a backup)",
}


@dataclass
class ToolsConfig:
    """Enablement in file order, the exec settings, and the text it was read from."""

    enabled: dict[str, bool] = field(default_factory=dict)
    exec: ExecConfig = field(default_factory=ExecConfig)

    @property
    def enabled_names(self) -> list[str]:
        return [name for name, on in self.enabled.items() if on]


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


def _parse_exec(source: TomlSource, value: Any, issues: list[ConfigIssue]) -> ExecConfig:
    if isinstance(value, bool):
        return ExecConfig(enabled=value)
    if not isinstance(value, dict):
        issues.append(source.issue(("exec",), f"'exec' must be true, false or a table, not {_toml_repr(value)}"))
        return ExecConfig()
    settings: dict[str, Any] = {}
    for key, item in value.items():
        where = ("exec", key)
        if key not in _EXEC_FIELDS:
            hint = ""
            if key == "binaries":
                hint = "; the binary allowlist belongs in config/sandbox.toml under [bwrap] binaries"
            else:
                import difflib  # only for a mistyped key: not imported at load

                close = difflib.get_close_matches(key, _EXEC_FIELDS, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
            issues.append(source.issue(where, f"unknown key 'exec.{key}'{hint}"))
            continue
        kind, minimum = _EXEC_FIELDS[key]
        problem = None
        if kind == "bool" and not isinstance(item, bool):
            problem = f"'exec.{key}' must be true or false, not {_toml_repr(item)}"
        elif kind == "int":
            if not isinstance(item, int) or isinstance(item, bool):
                problem = f"'exec.{key}' must be a whole number, not {_toml_repr(item)}"
            elif minimum is not None and item < minimum:
                unit = " milliseconds" if key == "timeout" else ""
                problem = f"'exec.{key}' must be at least {minimum}{unit}, not {item}"
        elif kind == "str" and (not isinstance(item, str) or not item.strip()):
            problem = f"'exec.{key}' must be a non-empty string"
        elif kind == "str" and not item.startswith("/"):
            problem = f"'exec.{key}' must be an absolute sandbox path such as /workspace/.exec-output"
        elif key == "outputDir" and (outside := _outside_sandbox(item)):
            problem = f"'exec.outputDir' {outside}, not {item!r}: spill files must land inside the sandbox"
        elif kind == "names":
            if not isinstance(item, list) or not all(isinstance(n, str) and n.strip() for n in item):
                problem = f"'exec.{key}' must be a list of non-empty variable names"
            else:
                item = tuple(item)
        if problem:
            issues.append(source.issue(where, problem))
        else:
            settings[key] = item
    return ExecConfig(**settings)


def _outside_sandbox(path: str) -> str | None:
    """Why a sandbox path lies outside the sandbox roots, judged as resolve() does; None when inside."""
    from ..paths import ROOTS, normalize  # lazy: paths imports config modules

    raw_root = next((seg for seg in path.split("/") if seg not in ("", ".")), "")
    root = normalize(path).lstrip("/").split("/", 1)[0]
    if root not in ROOTS:
        return "must be under " + ", ".join(f"/{r}" for r in ROOTS)
    if raw_root != root:
        return f"leaves /{raw_root} by '..'"
    return None


def parse_tools_config(
    source: TomlSource, known: Collection[str], mcp_servers: Collection[str] = ()
) -> tuple[ToolsConfig, list[ConfigIssue]]:
    """Validate tools.toml against the names this agent knows (`known`): built-in, Python, plugin, MCP."""
    issues: list[ConfigIssue] = []
    config = ToolsConfig()
    for name, value in source.data.items():
        where = (name,)
        if name == "exec":
            config.exec = _parse_exec(source, value, issues)
            config.enabled["exec"] = config.exec.enabled
            continue
        if name in REMOVED_TOOLS:
            issues.append(source.issue(where, REMOVED_TOOLS[name]))
            continue
        if name not in known:
            issues.append(source.issue(where, _unknown_message(name, known, mcp_servers)))
            continue
        if not isinstance(value, bool):
            issues.append(source.issue(where, f"tool '{name}' must be true or false, not {_toml_repr(value)}"))
            continue
        config.enabled[name] = value
    issues.sort(key=lambda i: i.line or 0)  # in file order, as an editor shows them
    return config, issues


def _unknown_message(name: str, known: Collection[str], mcp_servers: Collection[str]) -> str:
    if name.startswith("mcp__"):
        server = name[5:].split("__", 1)[0]
        if server not in mcp_servers:
            return f"unknown tool '{name}': there is no server '{server}' in config/mcp.toml"
        import difflib  # only for an unknown name: not imported at load

        prefix = f"mcp__{server}__"  # compared without it: the shared prefix alone would look alike
        offered = [k[len(prefix) :] for k in known if k.startswith(prefix)]
        close = difflib.get_close_matches(name[len(prefix) :], offered, n=1, cutoff=0.6)
        hint = f" (did you mean '{prefix}{close[0]}'?)" if close else ""
        return f"unknown tool '{name}': server '{server}' does not advertise it{hint}"
    import difflib  # only for an unknown name: not imported at load

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown tool '{name}'{hint}"
