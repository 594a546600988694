"""config/sandbox.toml: the exec backend, the binary allowlist, extra mounts and devices."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import params
from ..base.errors import ConfigIssue
from ..files.mounts import Mount
from .checker import Checker, label, toml_repr
from .tomlsource import TomlSource

SANDBOX_FILE = "config/sandbox.toml"
BACKENDS = ("bwrap", "none")
_TOP_KEYS = ("backend", "bwrap", "devices", "incus", "mounts")


@dataclass
class SandboxConfig:
    backend: str = "bwrap"
    binaries: tuple[str, ...] = ()
    mounts: list[Mount] = field(default_factory=list)
    usb: bool = False
    all_devices: bool = False


def _expand_source(raw: str) -> Path | None:
    if raw.startswith("~/"):
        home = os.environ.get("HOME", "")
        if not home.startswith("/"):
            return None
        return Path(home) / raw[2:]
    return Path(raw) if raw.startswith("/") else None


def _target_problem(target: str) -> str | None:
    if target.startswith("/"):
        return "must be relative (it appears under /workspace/), without a leading '/'"
    parts = target.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "must be a plain relative path such as 'data' or 'src/lib' (no '.', '..' or empty segments)"
    if "\0" in target:
        return "must not contain NUL characters"
    return None


def _target_check(target: str) -> str | None:
    problem = _target_problem(target)
    return f"{problem}, not {toml_repr(target)}" if problem else None


def _binary_names(names: list) -> str | None:
    bad = [n for n in names if not isinstance(n, str) or not n.strip() or any(c.isspace() or c == "\0" for c in n)]
    return f"must hold non-empty words, not {', '.join(toml_repr(n) for n in bad)}" if bad else None


_BWRAP = {"binaries": params.Array(default=[], description="an array of binary names", check=_binary_names)}
_DEVICES = {"usb": params.Boolean(default=False), "all": params.Boolean(default=False)}
_MOUNT = {
    "source": params.String(min_length=1, description="a host path"),
    "target": params.String(min_length=1, description="a relative path", check=_target_check),
    "mode": params.String(enum=("ro", "rw")),
}


def parse_sandbox_config(source: TomlSource | None, slug: str) -> tuple[SandboxConfig, list[ConfigIssue]]:
    config = SandboxConfig()
    if source is None:
        return config, []
    check = Checker(source)
    data = source.data
    check.unknown(data, _TOP_KEYS)

    backend = data.get("backend", "bwrap")
    if backend == "incus":
        check.fail(
            ("backend",),
            "backend 'incus' is not supported by this runtime; use 'bwrap' (or 'none' "
            "for trusted tutorial environments without user namespaces)",
        )
    elif check.value(("backend",), backend, params.String(enum=BACKENDS))[0]:
        config.backend = backend

    bwrap = check.table(("bwrap",), data.get("bwrap", {}), _BWRAP) or {}
    config.binaries = tuple(bwrap.get("binaries", ()))
    devices = check.table(("devices",), data.get("devices", {}), _DEVICES) or {}
    config.usb = devices.get("usb") is True
    config.all_devices = devices.get("all") is True

    mounts = data.get("mounts", [])
    if not isinstance(mounts, list):
        check.fail(("mounts",), f"'mounts' must be an array of tables ([[mounts]]), not {toml_repr(mounts)}")
        mounts = []
    indexed: list[tuple[int, Mount]] = []  # with their index in the file, for the line of an overlap
    for index, entry in enumerate(mounts):
        mount = _parse_mount(check, index, entry)
        if mount:
            indexed.append((index, mount))
    config.mounts = [m for _, m in indexed]
    _check_overlaps(source, indexed, slug, check.issues)
    issues = check.issues
    issues.sort(key=lambda i: i.line or 0)  # in file order, as an editor shows them
    return config, issues


def _parse_mount(check: Checker, index: int, entry: Any) -> Mount | None:
    where = ("mounts", index)
    mark = check.mark()
    fields = check.table(where, entry, _MOUNT)
    if fields is None:
        return None
    host = _expand_source(fields["source"]) if "source" in fields else None
    if "source" in fields and host is None:
        check.fail((*where, "source"), f"'{label(*where, 'source')}' must be absolute or start with '~/'")
    elif host is not None and not host.exists():
        check.warn((*where, "source"), f"'{label(*where, 'source')}' {fields['source']!r} does not exist")
    if host is None or check.errors_since(mark):
        return None
    return Mount(source=host, target=fields["target"], mode=fields["mode"])


def _check_overlaps(source: TomlSource, mounts: list[tuple[int, Mount]], slug: str, issues: list[ConfigIssue]) -> None:
    for i, (_, a) in enumerate(mounts):
        for j, b in mounts[i + 1 :]:
            if a.target == b.target:
                issues.append(
                    source.issue(
                        ("mounts", j, "target"),
                        f"Duplicate mount target '{a.target}' in sandbox.toml for agent '{slug}'",
                    )
                )
            elif b.target.startswith(a.target + "/") or a.target.startswith(b.target + "/"):
                issues.append(
                    source.issue(
                        ("mounts", j, "target"),
                        f"Overlapping mount targets '{a.target}' and '{b.target}' in sandbox.toml for agent '{slug}'",
                    )
                )
