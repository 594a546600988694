"""read-skill: the skill's name and description from its frontmatter, then the instructions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.files import frontmatter
from .html import FG_DIM, WARN, code, esc, frame
from .source import content_view

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    content = result.data.get("content", "")
    slug = result.data.get("slug", "")
    try:
        fields = frontmatter.parse(content, frontmatter.SKILL)
        about = f"{fields['name']}: {fields['description']}"
        about_html = f'<b>{esc(fields["name"])}</b> <span style="color:{FG_DIM}">{esc(fields["description"])}</span>'
    except frontmatter.FrontmatterError as exc:  # still readable; the prompt listing would skip it
        about = f"(frontmatter invalid: {exc}; the skill is left out of the prompt)"
        about_html = f'<span style="color:{WARN}">{esc(about)}</span>'
    title = f"skill {code(slug)}"
    body = f"<div>{about_html}</div>" + content_view(content, f"/skills/{slug}/SKILL.md")
    return f"skill {slug} — {about}\n\n{content}", frame("read-skill", body, title=title)
