"""<runtime root>/config/plugins.toml: `[[plugins]]` entries naming a local folder or an installed package."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..config.tomlsource import TomlSource
from ..errors import ConfigIssue

# Relative to the agent directory (<root>/agents/<slug>/), where every ConfigIssue's file is
PLUGINS_FILE = "../../config/plugins.toml"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class PluginEntry:
    index: int  # position in the [[plugins]] array, for issues at its line
    name: str | None  # a folder under <root>/plugins/
    package: str | None  # an entry point name in the group cireil.plugins
    allow_override: bool = False
    state_quota: int | None = None  # stateQuotaBytes as written; the original's default is 16 MiB

    @property
    def label(self) -> str:
        return f"plugin '{self.name}'" if self.name else f"plugin package '{self.package}'"


def is_npm_package(package: str) -> bool:
    """An npm name of the original (`@scope/name`): never a Python entry point name."""
    return package.startswith("@") or "/" in package


def parse_plugins_config(source: TomlSource | None) -> tuple[list[PluginEntry], list[ConfigIssue]]:
    if source is None:
        return [], []
    issues: list[ConfigIssue] = []
    for key in source.data:
        if key != "plugins":
            issues.append(source.issue((key,), f"unknown key '{key}' (expected [[plugins]] entries)"))
    entries = source.data.get("plugins", [])
    if not isinstance(entries, list):
        return [], [*issues, source.issue(("plugins",), "'plugins' must be an array of [[plugins]] tables")]
    out: list[PluginEntry] = []
    for index, entry in enumerate(entries):
        where = ("plugins", index)
        if not isinstance(entry, dict):
            issues.append(source.issue(("plugins",), "each [[plugins]] entry must be a table"))
            continue
        unknown = [k for k in entry if k not in ("name", "package", "allowOverride", "stateQuotaBytes")]
        for key in unknown:
            issues.append(
                source.issue(
                    (*where, key), f"unknown key '{key}' (expected name or package, allowOverride, stateQuotaBytes)"
                )
            )
        name, package = entry.get("name"), entry.get("package")
        if (name is None) == (package is None):
            issues.append(source.issue(where, "a [[plugins]] entry needs exactly one of name (a folder) or package"))
            continue
        value = name if name is not None else package
        if isinstance(package, str) and package and is_npm_package(package):
            issues.append(
                source.issue(
                    where,
                    f"plugin package '{package}' skipped: it is an npm plugin of the original CireilClaw, which "
                    "cannot run in cireil (its tools are not available here); the other plugins load",
                    severity="warning",
                )
            )
            continue
        if not isinstance(value, str) or not _NAME.match(value) or ".." in value:
            issues.append(
                source.issue(where, f"plugin {'name' if name is not None else 'package'} {value!r} is not valid")
            )
            continue
        override = entry.get("allowOverride", False)
        if not isinstance(override, bool):
            issues.append(source.issue((*where, "allowOverride"), "allowOverride must be true or false"))
            continue
        quota = entry.get("stateQuotaBytes")
        if quota is not None and (not isinstance(quota, int) or isinstance(quota, bool) or quota < 1):
            issues.append(source.issue((*where, "stateQuotaBytes"), "stateQuotaBytes must be an integer >= 1"))
            continue
        if not unknown:
            out.append(PluginEntry(index, name, package, override, quota))
    return out, issues
