"""config/sandbox.toml: the exec backend, the binary allowlist, extra mounts and devices."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigIssue
from .tomlsource import TomlSource

SANDBOX_FILE = "config/sandbox.toml"
BACKENDS = ("bwrap", "none")
_TOP_KEYS = {"backend", "bwrap", "incus", "devices", "mounts"}


@dataclass(frozen=True)
class Mount:
    source: Path  # host path, `~/` already expanded
    target: str  # relative; appears at /workspace/<target>
    mode: str  # "ro" | "rw"

    @property
    def read_only(self) -> bool:
        return self.mode == "ro"


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


def parse_sandbox_config(source: TomlSource | None, slug: str) -> tuple[SandboxConfig, list[ConfigIssue]]:
    config = SandboxConfig()
    if source is None:
        return config, []
    issues: list[ConfigIssue] = []
    data = source.data
    for key in data:
        if key not in _TOP_KEYS:
            issues.append(source.issue((key,), f"unknown key '{key}' (expected: {', '.join(sorted(_TOP_KEYS))})"))

    backend = data.get("backend", "bwrap")
    if backend == "incus":
        issues.append(
            source.issue(
                ("backend",),
                "backend 'incus' is not supported by this runtime; use 'bwrap' (or 'none' "
                "for trusted tutorial environments without user namespaces)",
            )
        )
    elif backend not in BACKENDS:
        issues.append(source.issue(("backend",), f"backend must be 'bwrap' or 'none', not {backend!r}"))
    else:
        config.backend = backend

    bwrap = data.get("bwrap", {})
    if not isinstance(bwrap, dict):
        issues.append(source.issue(("bwrap",), "[bwrap] must be a table"))
    else:
        for key in bwrap:
            if key != "binaries":
                issues.append(source.issue(("bwrap", key), f"unknown key 'bwrap.{key}' (expected: binaries)"))
        binaries = bwrap.get("binaries", [])
        if not isinstance(binaries, list):
            issues.append(source.issue(("bwrap", "binaries"), "'bwrap.binaries' must be a list of binary names"))
        else:
            good = []
            for name in binaries:
                if not isinstance(name, str) or not name.strip() or any(c.isspace() or c == "\0" for c in name):
                    issues.append(
                        source.issue(("bwrap", "binaries"), f"binary names must be non-empty words, not {name!r}")
                    )
                else:
                    good.append(name)
            config.binaries = tuple(good)

    devices = data.get("devices", {})
    if not isinstance(devices, dict):
        issues.append(source.issue(("devices",), "[devices] must be a table"))
    else:
        for key, value in devices.items():
            if key not in ("usb", "all"):
                issues.append(source.issue(("devices", key), f"unknown key 'devices.{key}' (expected: usb, all)"))
            elif not isinstance(value, bool):
                issues.append(source.issue(("devices", key), f"'devices.{key}' must be true or false"))
        config.usb = devices.get("usb") is True
        config.all_devices = devices.get("all") is True

    mounts = data.get("mounts", [])
    if not isinstance(mounts, list):
        issues.append(source.issue(("mounts",), "'mounts' must be an array of tables ([[mounts]])"))
        mounts = []
    indexed: list[tuple[int, Mount]] = []  # with their index in the file, for the line of an overlap
    for index, entry in enumerate(mounts):
        mount = _parse_mount(source, index, entry, issues)
        if mount:
            indexed.append((index, mount))
    config.mounts = [m for _, m in indexed]
    _check_overlaps(source, indexed, slug, issues)
    issues.sort(key=lambda i: i.line or 0)  # in file order, as an editor shows them
    return config, issues


def _parse_mount(source: TomlSource, index: int, entry: Any, issues: list[ConfigIssue]) -> Mount | None:
    where = ("mounts", index)
    if not isinstance(entry, dict):
        issues.append(source.issue(where, f"mounts[{index}] must be a table with source, target and mode"))
        return None
    ok = True
    for key in entry:
        if key not in ("source", "target", "mode"):
            issues.append(source.issue((*where, key), f"unknown key '{key}' in mounts[{index}]"))
            ok = False
    raw_source, target, mode = entry.get("source"), entry.get("target"), entry.get("mode")
    host: Path | None = None
    if not isinstance(raw_source, str) or not raw_source:
        issues.append(source.issue((*where, "source"), f"mounts[{index}].source is required (a host path)"))
        ok = False
    else:
        host = _expand_source(raw_source)
        if host is None:
            issues.append(
                source.issue((*where, "source"), f"mounts[{index}].source must be absolute or start with '~/'")
            )
            ok = False
        elif not host.exists():
            issues.append(
                source.issue(
                    (*where, "source"), f"mounts[{index}].source '{raw_source}' does not exist", severity="warning"
                )
            )
    if not isinstance(target, str) or not target:
        issues.append(source.issue((*where, "target"), f"mounts[{index}].target is required"))
        ok = False
    elif problem := _target_problem(target):
        issues.append(source.issue((*where, "target"), f"mounts[{index}].target '{target}' {problem}"))
        ok = False
    if mode not in ("ro", "rw"):
        issues.append(source.issue((*where, "mode"), f"mounts[{index}].mode must be 'ro' or 'rw', not {mode!r}"))
        ok = False
    if not ok or host is None:
        return None
    return Mount(source=host, target=target, mode=mode)


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
