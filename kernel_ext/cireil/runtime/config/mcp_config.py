"""config/mcp.toml: the HTTP MCP servers an agent may use (spec, "HTTP MCP tools")."""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigIssue
from .tomlsource import TomlSource
from .urlcheck import url_problem

MCP_FILE = "config/mcp.toml"
DEFAULT_TIMEOUT_MS = 60000
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
# Headers the Streamable HTTP transport sets itself; letting a config override them breaks the protocol.
TRANSPORT_HEADERS = frozenset(
    h.lower()
    for h in (
        "Accept",
        "Content-Type",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Last-Event-ID",
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Origin",
    )
)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass(frozen=True)
class McpServer:
    name: str
    url: str
    timeout: int = DEFAULT_TIMEOUT_MS
    headers: dict[str, str] = field(default_factory=dict)


def transport_owned(header: str) -> bool:
    lower = header.lower()
    return lower in TRANSPORT_HEADERS or lower.startswith("mcp-")


def parse_mcp_config(source: TomlSource | None) -> tuple[list[McpServer], list[ConfigIssue]]:
    if source is None:
        return [], []
    issues: list[ConfigIssue] = []
    servers: list[McpServer] = []
    for key in source.data:
        if key != "servers":
            issues.append(source.issue((key,), f"unknown key '{key}' (expected [servers.<name>] tables)"))
    table = source.data.get("servers", {})
    if not isinstance(table, dict):
        issues.append(source.issue(("servers",), "'servers' must be a table of [servers.<name>] tables"))
        return [], issues
    for name, entry in table.items():
        server = _parse_server(source, name, entry, issues)
        if server:
            servers.append(server)
    return servers, issues


def _parse_server(source: TomlSource, name: str, entry: object, issues: list[ConfigIssue]) -> McpServer | None:
    where = ("servers", name)
    ok = True
    if not _SERVER_NAME.match(name) or "__" in name:
        issues.append(
            source.issue(where, f"server name '{name}' may use only ASCII letters, digits, '-' and '_', without '__'")
        )
        ok = False
    if not isinstance(entry, dict):
        issues.append(source.issue(where, f"[servers.{name}] must be a table with a url"))
        return None
    for key in entry:
        if key not in ("url", "timeout", "headers"):
            issues.append(
                source.issue(
                    (*where, key), f"unknown key '{key}' in [servers.{name}] (expected: url, timeout, headers)"
                )
            )
            ok = False
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        issues.append(source.issue((*where, "url"), f"[servers.{name}] needs a url"))
        ok = False
    else:
        problem = url_problem(url)
        if problem:
            shown = f", not {url!r}" if problem.startswith("must") else f": {url!r}"
            issues.append(source.issue((*where, "url"), f"server '{name}': url {problem}{shown}"))
            ok = False
    timeout = entry.get("timeout", DEFAULT_TIMEOUT_MS)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
        issues.append(
            source.issue(
                (*where, "timeout"),
                f"server '{name}': timeout must be a positive whole number of milliseconds, not {timeout!r}",
            )
        )
        ok = False
    headers = entry.get("headers", {})
    clean: dict[str, str] = {}
    if not isinstance(headers, dict):
        issues.append(source.issue((*where, "headers"), f"[servers.{name}.headers] must be a table"))
        ok = False
    else:
        for header, value in headers.items():
            hwhere = (*where, "headers", header)
            if not _HEADER_NAME.match(header):
                issues.append(source.issue(hwhere, f"server '{name}': {header!r} is not a valid header name"))
                ok = False
            elif transport_owned(header):
                issues.append(
                    source.issue(
                        hwhere, f"server '{name}': header '{header}' is owned by the MCP transport and cannot be set"
                    )
                )
                ok = False
            elif not isinstance(value, str) or "\n" in value or "\r" in value:
                issues.append(source.issue(hwhere, f"server '{name}': header '{header}' must be a one-line string"))
                ok = False
            else:
                clean[header] = value
    if not ok:
        return None
    return McpServer(name=name, url=url, timeout=timeout, headers=clean)


def exposure_warning(agent_dir: Path, servers: list[McpServer]) -> ConfigIssue | None:
    """A warning when mcp.toml holds secrets (headers, or a URL carrying credentials) that others may read.

    The spec: "Protect this file as a credential when it contains secrets." A file naming only public
    URLs is not a secret, so it is left alone; POSIX modes only (elsewhere there is nothing to read).
    """
    secret = [s.name for s in servers if s.headers or _url_has_credentials(s.url)]
    if not secret or os.name != "posix":
        return None
    path = agent_dir / MCP_FILE
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    who = " and ".join(w for w, bit in (("group", stat.S_IRGRP), ("others", stat.S_IROTH)) if mode & bit)
    return ConfigIssue(
        MCP_FILE,
        None,
        f"holds credentials (server {', '.join(repr(n) for n in secret)}) but {who} can read it "
        f"(mode {mode:04o}); protect it as a credential file: chmod 600 {shlex.quote(str(path))}",
        severity="warning",
    )


def _url_has_credentials(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.username or parts.password or parts.query)
