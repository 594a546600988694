"""<runtime root>/config/plugins.toml: `[[plugins]]` entries naming a local folder or an installed package.

A package is a Python entry point (group cireil.plugins) when one is installed, else an npm package of the
original CireilClaw installed in the runtime root (jsplugins.py runs those)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..base import params
from ..base.errors import ConfigIssue
from ..config.checker import Checker, toml_repr
from ..config.tomlsource import TomlSource

# Relative to the agent directory (<root>/agents/<slug>/), where every ConfigIssue's file is
PLUGINS_FILE = "../../config/plugins.toml"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_NPM = re.compile(r"^(@[a-z0-9~][a-z0-9._~-]*/)?[a-z0-9~][a-z0-9._~-]*$")  # npm's own rule for names


@dataclass(frozen=True)
class PluginEntry:
    index: int  # position in the [[plugins]] array, for issues at its line
    name: str | None  # a folder under <root>/plugins/ (a Python plugin, or a JS one with a package.json)
    package: str | None  # an entry point name in the group cireil.plugins, else an npm package of the root
    allow_override: bool = False
    state_quota: int | None = None  # stateQuotaBytes as written; the original's default is 16 MiB

    @property
    def label(self) -> str:
        return f"plugin '{self.name}'" if self.name else f"plugin package '{self.package}'"


def is_npm_package(package: str) -> bool:
    """An npm name of the original (`@scope/name`): never a Python entry point name."""
    return package.startswith("@") or "/" in package


_ENTRY = {
    "name": params.String(required=False),
    "package": params.String(required=False),
    "allowOverride": params.Boolean(default=False),
    "stateQuotaBytes": params.Integer(minimum=1, required=False),
}


def parse_plugins_config(source: TomlSource | None) -> tuple[list[PluginEntry], list[ConfigIssue]]:
    if source is None:
        return [], []
    check = Checker(source)
    check.unknown(source.data, ("plugins",))
    entries = source.data.get("plugins", [])
    if not isinstance(entries, list):
        check.fail(("plugins",), f"'plugins' must be an array of [[plugins]] tables, not {toml_repr(entries)}")
        return [], check.issues
    out: list[PluginEntry] = []
    for index, entry in enumerate(entries):
        where = ("plugins", index)
        mark = check.mark()
        fields = check.table(where, entry, _ENTRY)
        if fields is None:
            continue
        name, package = entry.get("name"), entry.get("package")
        if (name is None) == (package is None):
            check.fail(where, "a [[plugins]] entry needs exactly one of name (a folder) or package")
            continue
        value = name if name is not None else package
        if isinstance(package, str) and is_npm_package(package):
            if not _NPM.match(package):
                check.fail(where, f"plugin package {package!r} is not a valid npm package name")
                continue
        elif not isinstance(value, str) or not _NAME.match(value) or ".." in value:
            check.fail(where, f"plugin {'name' if name is not None else 'package'} {value!r} is not valid")
            continue
        if not check.errors_since(mark):
            out.append(PluginEntry(index, name, package, fields["allowOverride"], fields.get("stateQuotaBytes")))
    return out, check.issues
