"""What `%cireil mcp` shows: a server panel (with a Reconnect button) and the wire log.

Everything a server sent (instructions, capabilities, headers, bodies) is escaped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from ...render import wire
from ...render.html import ERROR, FG_DIM, MONO, OK, esc, frame, pairs
from .base import View

if TYPE_CHECKING:
    from ...runtime.agent import Agent


@dataclass
class WireLogView(View):
    """`%cireil mcp log [SERVER]`: the recent exchanges, oldest first, each folded."""

    entries: list[dict[str, Any]]
    scope: str  # "server 'demo'" or "all MCP servers"

    def text(self) -> str:
        if not self.entries:
            return f"wire log of {self.scope}: empty"
        return f"wire log of {self.scope}: {len(self.entries)} exchanges, oldest first\n" + wire.text(self.entries)

    def html(self) -> str:
        if not self.entries:
            body = f'<span style="color:{FG_DIM}">no exchanges recorded</span>'
        else:
            servers = {e.get("server") for e in self.entries}
            rows = []
            for entry in self.entries:
                label = f'<span style="color:{FG_DIM}">[{esc(entry.get("server"))}]</span> ' if len(servers) > 1 else ""
                rows.append(f"<div>{label}{wire.html([entry])}</div>")
            body = "".join(rows)
        title = f"wire log · {esc(self.scope)} · {len(self.entries)} exchanges"
        return frame("mcp", body, title=title)


def panel_rows(status: dict[str, Any]) -> list[tuple[str, str]]:
    info = status.get("server_info") or {}
    name = " ".join(str(info[k]) for k in ("name", "version") if info.get(k)) if isinstance(info, dict) else ""
    rows = [("url", status["url"]), ("revision", status.get("revision") or "(not connected)")]
    rows.append(("session", status["session"]))
    if name:
        rows.append(("server", name))
    rows.append(("capabilities", ", ".join(sorted(status.get("capabilities") or {})) or "(none)"))
    unusable = status.get("unusable_tools") or {}
    tools = f"{status['tools']} listed" + (f", {len(unusable)} not offered" if unusable else "")
    rows.append(("tools", tools))
    rows.append(("connected", status.get("connected_at") or "-"))
    log = status.get("wire_log") or {}
    rows.append(("wire log", f"{log.get('kept', 0)} of the last {log.get('capacity', 0)} exchanges kept"))
    return rows


def panel_text(status: dict[str, Any]) -> str:
    lines = [f"MCP server '{status['server']}'"]
    lines += [f"  {k}: {v}" for k, v in panel_rows(status)]
    if status.get("instructions"):
        lines.append("  instructions: " + status["instructions"].replace("\n", "\n    "))
    for name, why in (status.get("unusable_tools") or {}).items():
        lines.append(f"  not offered: {name}: {why}")
    errors = status.get("errors") or []
    lines.append("  last errors: " + ("none" if not errors else ""))
    lines += [f"    {e['at']} {e['error']}" for e in errors]
    return "\n".join(lines)


def panel_html(status: dict[str, Any]) -> str:
    parts = [pairs(panel_rows(status), value_style="overflow-wrap:anywhere")]
    caps = status.get("capabilities") or {}
    if caps:
        parts.append(
            f'<details><summary style="color:{FG_DIM}">capabilities</summary>'
            f'<pre style="font-family:{MONO};margin:0">{esc(json.dumps(caps, indent=2, default=str))}</pre></details>'
        )
    if status.get("instructions"):
        parts.append(
            f'<details open><summary style="color:{FG_DIM}">instructions</summary>'
            f'<div style="white-space:pre-wrap">{esc(status["instructions"])}</div></details>'
        )
    for name, why in (status.get("unusable_tools") or {}).items():
        parts.append(f'<div style="color:{ERROR}">not offered: {esc(name)}: {esc(why)}</div>')
    errors = status.get("errors") or []
    if errors:
        items = "".join(f"<li>{esc(e['at'])} {esc(e['error'])}</li>" for e in errors)
        parts.append(f'<div style="color:{ERROR}">last errors<ul style="margin:2px 0">{items}</ul></div>')
    else:
        parts.append(f'<div style="color:{OK}">no errors</div>')
    return frame("mcp", "".join(parts), title=f"MCP server {esc(status['server'])}")


class ServerPanel(W.VBox):
    """One server's state and a Reconnect button (a new transport; the tool definitions stay until restart)."""

    def __init__(self, agent: Agent, server: str) -> None:
        self.agent = agent
        self.server = server
        self.view = W.HTML()
        self.reconnect_button = W.Button(
            description="Reconnect",
            icon="refresh",
            tooltip="open a new connection (new session); tool definitions stay until %cireil restart",
            layout=W.Layout(width="auto"),
        )
        self.status = W.HTML("")
        super().__init__([self.view, W.HBox([self.reconnect_button, self.status])])
        self.reconnect_button.on_click(self.reconnect)
        self.refresh()

    def refresh(self) -> None:
        self.state = self.agent.mcp_status(self.server)[0]
        self.view.value = panel_html(self.state)

    def reconnect(self, _button: Any = None) -> None:
        self.reconnect_button.disabled = True
        self.status.value = f'<span style="color:{FG_DIM}">reconnecting…</span>'
        try:
            self.agent.mcp_reconnect(self.server)
        except Exception as exc:  # a widget callback's exception would only reach the browser's log
            self.status.value = f'<span style="color:{ERROR}">✖ {esc(exc)}</span>'
        else:
            self.status.value = f'<span style="color:{OK}">✓ reconnected; tool definitions unchanged</span>'
        finally:
            self.reconnect_button.disabled = False
            self.refresh()

    def __repr__(self) -> str:
        return panel_text(self.state)
