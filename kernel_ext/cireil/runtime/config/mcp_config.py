"""config/mcp.toml: the HTTP MCP servers an agent may use (spec, "HTTP MCP tools")."""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..base import params
from ..base.errors import ConfigIssue
from ..base.secrets import SECRETS, dataclass_repr
from .checker import Checker, header_name_ok, label, toml_repr
from .tomlsource import TomlSource
from .urlcheck import url_message

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


@dataclass(frozen=True)
class McpServer:
    name: str
    url: str
    timeout: int = DEFAULT_TIMEOUT_MS
    headers: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # header values and URL credentials are secrets
        return dataclass_repr(self, ("headers",))


def transport_owned(header: str) -> bool:
    lower = header.lower()
    return lower in TRANSPORT_HEADERS or lower.startswith("mcp-")


def _header_value(value: str) -> str | None:
    return "must be a one-line string" if "\n" in value or "\r" in value else None


_SERVER = {
    "url": params.String(min_length=1, description="an http:// or https:// URL", check=url_message),
    "timeout": params.Integer(minimum=1, default=DEFAULT_TIMEOUT_MS, description="a whole number of milliseconds"),
    "headers": params.RawObject(default={}),  # its keys are header names, checked below
}


def parse_mcp_config(source: TomlSource | None) -> tuple[list[McpServer], list[ConfigIssue]]:
    if source is None:
        return [], []
    check = Checker(source)
    servers: list[McpServer] = []
    check.unknown(source.data, ("servers",))
    table = source.data.get("servers", {})
    if not isinstance(table, dict):
        check.fail(("servers",), f"'servers' must be a table of [servers.<name>] tables, not {toml_repr(table)}")
        return [], check.issues
    for name, entry in table.items():
        server = _parse_server(check, name, entry)
        if server:
            servers.append(server)
    return servers, check.issues


def _parse_server(check: Checker, name: str, entry: object) -> McpServer | None:
    where = ("servers", name)
    mark = check.mark()
    if not _SERVER_NAME.match(name) or "__" in name:
        check.fail(where, f"server name '{name}' may use only ASCII letters, digits, '-' and '_', without '__'")
    fields = check.table(where, entry, _SERVER)
    if fields is None:
        return None
    headers = entry.get("headers", {}) if isinstance(entry, dict) else {}
    clean: dict[str, str] = {}
    for header, value in headers.items() if isinstance(headers, dict) else ():
        path = (*where, "headers", header)
        if not header_name_ok(header):
            check.fail(path, f"'{label(*path)}' is not a valid header name")
        elif transport_owned(header):
            check.fail(path, f"'{label(*path)}' is owned by the MCP transport and cannot be set")
        elif check.value(path, value, params.String(description="a one-line string", check=_header_value))[0]:
            clean[header] = value
    SECRETS.add_url(fields.get("url"))  # masked wherever shown or stored from here on (base/secrets.py)
    SECRETS.add_all(clean.values())
    if check.errors_since(mark):
        return None
    return McpServer(name=name, url=fields["url"], timeout=fields["timeout"], headers=clean)


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
