"""What the `%cireil` subcommands show: small display objects, text/plain always plus scoped HTML."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...render.html import (
    ERROR,
    FG_DIM,
    LINED,
    MONO,
    OK,
    WARN,
    WORD_WRAP,
    code,
    esc,
    folded_text,
    frame,
    pairs,
    table,
)
from .base import View
from .lint import lint_html, lint_text

if TYPE_CHECKING:
    from ...runtime.agent import DryRunReport
    from ...runtime.base.errors import ConfigIssue
    from ...runtime.engine.toollint import Finding
    from ...runtime.sessions.state import Session
    from ...runtime.toolkit.tool import Tool


def cut_at_word(text: str, limit: int) -> str:
    """`text` shortened to at most `limit` characters at a word boundary, with "…" when cut."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:-—") + "…"


def _first_sentence(text: str, limit: int = 90) -> str:
    return cut_at_word(text.split(". ", 1)[0].rstrip("."), limit)


def magic_usage(tool: Tool) -> str:
    """How the tool's magic is written, e.g. `%cireil_list_dir PATH` or `%%cireil_write PATH` + body."""
    main = f" {tool.main_arg.upper()}" if tool.main_arg else ""
    if tool.body_arg or tool.parse_body:
        return f"%%{tool.magic_name}{main}"
    return f"%{tool.magic_name}{main}"


@dataclass
class ArgumentHelp(View):
    """A tool magic with missing or wrong arguments: the problem, the forms of the call, the parameters."""

    problem: str
    usage: list[str]
    parameters: list[str]

    def text(self) -> str:
        lines = [self.problem, "usage:", *(f"  {u}" for u in self.usage), "parameters:"]
        return "\n".join(lines + [f"  {p}" for p in self.parameters])

    def html(self) -> str:
        pre = f"font-family:{MONO};margin:2px 0 6px 0;{WORD_WRAP}"
        body = (
            f'<div style="color:{ERROR};margin-bottom:4px">{esc(self.problem)}</div>'
            f'<div style="color:{FG_DIM}">usage</div><pre style="{pre}">{esc(chr(10).join(self.usage))}</pre>'
            f'<div style="color:{FG_DIM}">parameters</div><pre style="{pre}">{esc(chr(10).join(self.parameters))}</pre>'
        )
        return frame("usage", body)


@dataclass
class ToolTable(View):
    """`%cireil tools`: every enabled tool, how to call it, where it comes from, what it does."""

    slug: str
    tools: list[Tool]
    refused: dict[str, str]  # tool name -> the existing magic that kept its own from being registered
    costs: dict[str, int] | None = None  # tokens each definition adds to every model request (toolcost.py)

    def _cost(self, tool: Tool) -> str:
        return f"{self.costs[tool.name]:,}" if self.costs and tool.name in self.costs else ""

    def _total(self) -> str:
        return f"{sum(self.costs.values()):,} tokens of tool definitions in every model request" if self.costs else ""

    def _magic(self, tool: Tool) -> str:
        taken = self.refused.get(tool.name)
        return f"(not registered: {taken} exists)" if taken else magic_usage(tool)

    def text(self) -> str:
        if not self.tools:
            return f"agent '{self.slug}': no tools enabled (config/tools.toml)"
        rows = [(t.name, self._magic(t), t.origin, self._cost(t), _first_sentence(t.description)) for t in self.tools]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"agent '{self.slug}': {len(rows)} enabled tool{'s' if len(rows) != 1 else ''}"]
        lines += [
            f"  {n:<{widths[0]}}  {m:<{widths[1]}}  {o:<{widths[2]}}  {c:>{widths[3]}}  {d}" for n, m, o, c, d in rows
        ]
        if self.costs:
            lines.append(f"total: {self._total()} (the tokens column: each tool's share)")
        return "\n".join(lines)

    def html(self) -> str:
        if not self.tools:
            return frame("tools", f'<span style="color:{FG_DIM}">no tools enabled</span>', title=esc(self.slug))
        columns = (
            ("tool · magic", "origin", "tokens", "description")
            if self.costs
            else ("tool · magic", "origin", "description")
        )
        # names, magics and origins never wrap ("built-in" broke over two lines at 1400 px); the magic sits under the
        # name, not in a column of its own, so that descriptions get the width left. They wrap at word boundaries,
        # their first paragraph shown and the rest folded (the original's descriptions run to 1,500 characters:
        # shown whole, 20 tools made a 3,400 px table).
        keep = "white-space:nowrap"
        rows = [
            [
                (
                    f'<div style="font-weight:600">{esc(t.name)}</div><div style="font-family:{MONO};font-size:90%;'
                    f'color:{WARN if t.name in self.refused else FG_DIM}">{esc(self._magic(t))}</div>',
                    keep,
                ),
                (esc(t.origin), f"{keep};color:{FG_DIM}"),
                *([(esc(self._cost(t)), f"{keep};text-align:right;font-family:{MONO}")] if self.costs else []),
                (folded_text(t.description), "min-width:16em;width:100%"),
            ]
            for t in self.tools
        ]
        body = table(rows, head=columns, cell=LINED, style="border-collapse:collapse;width:100%")
        if self.costs:
            body += f'<div class="cireil-tool-cost" style="margin-top:4px;font-weight:600">{esc(self._total())}</div>'
        return frame("tools", body, title=f"{esc(self.slug)} · {len(self.tools)} enabled tools")


@dataclass
class DryRunView(View):
    """`%cireil dry-run`: every problem as FILE:LINE: message, then the tools that would be enabled."""

    report: DryRunReport
    builtins: bool = False  # also the lint findings about cireil's built-in tools (`--builtins`)

    def _lint(self) -> tuple[list[Finding], int]:
        """The findings to show and how many about built-ins were left out."""
        from ...runtime.engine.toollint import split_builtin

        own, builtin = split_builtin(self.report.lint, self.report.tools)
        return (self.report.lint, 0) if self.builtins else (own, len(builtin))

    def _lines(self, issues: list[ConfigIssue]) -> list[str]:
        return [str(issue) for issue in issues]

    def _summary(self) -> str:
        r = self.report
        if not r.ok:
            return f"invalid: {len(r.errors)} error{'s' if len(r.errors) != 1 else ''}"
        names = ", ".join(t.name for t in r.tools) or "none"
        return f"valid: tools enabled: {names}"

    def text(self) -> str:
        lines = [f"dry-run {self.report.directory}"]
        lines += self._lines(self.report.errors) + self._lines(self.report.warnings)
        lines.append(self._summary())
        if self.report.ok:
            lines.append(lint_text(*self._lint()))
        return "\n".join(lines)

    def html(self) -> str:
        items = [
            f'<div style="color:{ERROR};font-family:{MONO}">✖ {esc(line)}</div>'
            for line in self._lines(self.report.errors)
        ]
        items += [
            f'<div style="color:{WARN};font-family:{MONO}">⚠ {esc(line)}</div>'
            for line in self._lines(self.report.warnings)
        ]
        if self.report.ok:  # one short verdict; the tool list in plain text after it
            names = ", ".join(t.name for t in self.report.tools) or "none"
            items.append(
                f'<div style="margin-top:4px"><span style="color:{OK};font-weight:600">✓ valid</span>'
                f' <span style="color:{FG_DIM}">· tools enabled: {esc(names)}</span></div>'
            )
        else:
            items.append(f'<div style="color:{ERROR};margin-top:4px;font-weight:600">{esc(self._summary())}</div>')
        if self.report.ok:
            items.append(lint_html(*self._lint()))
        title = f"dry-run {code(self.report.directory)}"
        return frame("dry-run", "".join(items), title=title, failed=not self.report.ok)


@dataclass
class SessionCard(View):
    """`%cireil session`: which session tool calls and turns belong to, and what it holds."""

    slug: str
    session: Session
    tools: str = ""  # the session's tool grant in words (Agent.grant_text)
    read_only: str | None = None  # why sessions.db must not be written for this session now

    def _rows(self) -> list[tuple[str, str]]:
        s = self.session
        rows = [("agent", self.slug), ("session", s.id), ("platform", s.platform)]
        if self.tools:
            rows.append(("tools", self.tools))
        if self.read_only:
            rows.append(("read-only", self.read_only))
        rows.append(("messages", f"{len(s.history):,}" + (f" ({s.cursor:,} pruned from view)" if s.cursor else "")))
        if s.opened_files:
            rows.append(("open files", ", ".join(s.opened_files)))
        if s.summaries:
            rows.append(("topic summaries", ", ".join(x.get("slug", "?") for x in s.summaries)))
        if s.last_activity:
            rows.append(("last message", s.last_activity))
        return rows

    def text(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self._rows())

    def html(self) -> str:
        return frame("session", pairs(self._rows()), title="session")


@dataclass
class SessionList(View):
    """`%cireil sessions`: the persisted sessions, most recently active first; the current one marked."""

    slug: str
    current: str
    sessions: list[dict]
    persistent: bool

    def text(self) -> str:
        if not self.sessions:
            return f"agent '{self.slug}' has no sessions yet" + (
                "" if self.persistent else " (sessions.db unavailable)"
            )
        from ...render.list_sessions import session_lines

        return "\n".join(
            [f"sessions of agent '{self.slug}' (* = current):", *session_lines(self.sessions, self.current)]
        )

    def html(self) -> str:
        if not self.sessions:
            return frame("sessions", esc(self.text()), title="sessions")
        from ...render.list_sessions import session_table

        return frame("sessions", session_table(self.sessions, self.current), title=f"sessions of {esc(self.slug)}")


@dataclass
class HelpText(View):
    """`%cireil help`: the subcommands that work in this version and the forms of a tool magic."""

    subcommands: list[tuple[str, str]]
    footer: list[str]

    def text(self) -> str:
        from ...commands import format_help

        return format_help(self.subcommands, self.footer)

    def html(self) -> str:
        from ...commands import WIDE

        # a usage up to WIDE characters keeps its line; a longer one (eval's) wraps at its options within WIDE
        # characters, so that no usage takes the width its description needs
        rows = [
            (
                (
                    f'<div style="max-width:{WIDE}ch">%cireil {esc(usage)}</div>',
                    f"font-family:{MONO}" + (";white-space:nowrap" if len(usage) <= WIDE else ""),
                ),
                (esc(what), f"min-width:16em;{WORD_WRAP}"),
            )
            for usage, what in self.subcommands
        ]
        foot = "".join(f'<div style="font-family:{MONO};{WORD_WRAP}">{esc(line)}</div>' for line in self.footer)
        listed = table(rows, cell=LINED, style="border-collapse:collapse;width:100%")
        body = f'{listed}<div style="margin-top:6px">{foot}</div>'
        return frame("help", body, title="cireil")


@dataclass
class CommandHelp(View):
    """`%cireil help SUB` (or `%cireil SUB --help`): argparse's help of the subcommand, as declared."""

    body: str

    def text(self) -> str:
        return self.body

    def html(self) -> str:
        return frame("help", f'<pre style="font-family:{MONO};margin:0;{WORD_WRAP}">{esc(self.body)}</pre>')
