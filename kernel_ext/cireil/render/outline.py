"""An outline as a collapsible tree (HTML) and an indented list (text), plus its "open" actions."""

from __future__ import annotations

from dataclasses import dataclass, field

from .html import BG_SOFT, FG_DIM, MONO, esc

ACTION_LEVELS = 2  # open buttons for the two outermost levels: a 2,000-heading file stays usable
ACTION_LIMIT = 24


@dataclass
class Node:
    section: dict
    depth: int = 0
    children: list[Node] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.section["line"] + self.section["lines"] - 1


def tree(sections: list[dict]) -> list[Node]:
    """Nest by span: a section inside another's span is its child (works for headings and XML alike)."""
    roots: list[Node] = []
    stack: list[Node] = []
    for section in sections:
        node = Node(section)
        while stack and not (section["line"] > stack[-1].section["line"] and node.end <= stack[-1].end):
            stack.pop()
        node.depth = len(stack)
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def walk(nodes: list[Node]):
    for node in nodes:
        yield node
        yield from walk(node.children)


def line_range(section: dict) -> str:
    end = section["line"] + section["lines"] - 1
    return f"{section['line']}–{end}" if end != section["line"] else str(section["line"])


def _tokens(section: dict) -> str:
    return f"~{section['estTokens']} tok" if "estTokens" in section else ""


def text(outline: dict) -> str:
    sections = outline.get("sections", [])
    lines = [
        f"{outline.get('path', '')}: outline of {len(sections)} sections, {outline.get('lines')} lines, "
        f"~{outline.get('estTokens')} tokens (pin sections with open-file; raw=true reads everything)"
    ]
    if outline.get("note"):
        lines.append(f"note: {outline['note']}")
    for node in walk(tree(sections)):
        s = node.section
        lines.append(
            f"{'  ' * (node.depth + 1)}{s['type']}  {s['label'] or '(no label)'}  [{s['id']}]  "
            f"lines {line_range(s)}  {_tokens(s)}".rstrip()
        )
    return "\n".join(lines)


def row_html(section: dict) -> str:
    badge = (
        f'<span style="font-family:{MONO};font-size:85%;background:{BG_SOFT};padding:0 4px;'
        f'border-radius:3px;margin-right:6px">{esc(section["type"])}</span>'
    )
    meta = f"<code>{esc(section['id'])}</code> · lines {line_range(section)}"
    if "estTokens" in section:
        meta += f" · ~{section['estTokens']} tok"
    return f'{badge}{esc(section["label"] or "(no label)")} <span style="color:{FG_DIM};font-size:90%">{meta}</span>'


def _node_html(node: Node) -> str:
    if not node.children:
        return f'<div style="margin-left:1.2em;padding:1px 0">{row_html(node.section)}</div>'
    children = "".join(_node_html(c) for c in node.children)
    opened = " open" if node.depth == 0 else ""
    return (
        f'<details{opened} style="margin-left:{0 if node.depth == 0 else 1.2}em">'
        f'<summary style="cursor:pointer;padding:1px 0">{row_html(node.section)}</summary>{children}</details>'
    )


def html(outline: dict) -> str:
    note = f'<div style="color:{FG_DIM}">{esc(outline["note"])}</div>' if outline.get("note") else ""
    return note + "".join(_node_html(n) for n in tree(outline.get("sections", [])))


def openable(outline: dict) -> list[dict]:
    """Sections worth a button: the outermost levels, capped, so big documents stay usable."""
    chosen = [n.section for n in walk(tree(outline.get("sections", []))) if n.depth < ACTION_LEVELS]
    if len(chosen) > ACTION_LIMIT:
        chosen = [n.section for n in walk(tree(outline["sections"])) if n.depth == 0][:ACTION_LIMIT]
    return chosen
