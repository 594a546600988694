"""write: create or overwrite a sandbox file (reference §4.9), atomically."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Params, String
from ..files import frontmatter
from ..files.atomic import write_sandbox_file
from ..files.paths import ResolvedPath, normalize
from ..files.textfile import decode, read_bytes
from ..toolkit.tool import SpecDifference, Tool, ToolContext


def _blocks_need_md(path: str) -> str | None:
    norm = normalize(path)  # `//blocks/x.txt` and `/blocks/x.md/../y` name /blocks files too
    if (norm == "/blocks" or norm.startswith("/blocks/")) and not norm.endswith(".md"):
        return "Files in /blocks/ must end with .md extension"
    return None


def _existing_text(resolved: ResolvedPath) -> str | None:
    try:
        return decode(read_bytes(resolved))
    except ToolError:  # missing, a directory, a FIFO: there is no frontmatter to keep
        return None


def _with_frontmatter(resolved: ResolvedPath, content: str) -> str:
    kind = frontmatter.kind_for(resolved.sandbox)
    if kind is None:
        return content
    try:
        if content.startswith(kind.delimiter):
            frontmatter.parse(content, kind)
            return content
        existing = _existing_text(resolved)
        if existing is not None:
            parts = frontmatter.split(existing, kind)
            if parts is not None:
                frontmatter.parse(existing, kind)
                return parts[0] + content
    except frontmatter.FrontmatterError as exc:
        raise ToolError(
            f"Invalid frontmatter: {exc}",
            hint=f"{kind.name.capitalize()} files keep {kind.language} frontmatter between "
            f"'{kind.delimiter}' lines; write the body only to keep the existing frontmatter.",
        ) from None
    return content


async def run(args: dict, ctx: ToolContext) -> dict:
    path: str = args["path"]
    resolved = ctx.paths.resolve_for_write(path)
    content = _with_frontmatter(resolved, args["content"])
    write_sandbox_file(resolved, content.encode("utf-8"), path)
    ctx.session.forget_sections(resolved.sandbox)
    return {"path": path, "success": True}


TOOL = Tool(
    name="write",
    path_effect="changes",
    # The original's text as it sends it when edit is enabled; with edit off it points at str-replace instead.
    description=(
        "Create a new file or completely overwrite an existing file with the provided content.\n\n"
        "Parent directories are created automatically if they don't exist.\n\n"
        "Constraints:\n"
        "- Files under /blocks/ must have a .md extension.\n"
        "- Allowed path roots: /workspace/, /memories/, /blocks/, /skills/.\n"
        "- For existing files under /blocks/ and /skills/, the existing frontmatter is auto-preserved when "
        "the provided content does not include frontmatter.\n"
        "Note that paths used here *must* be absolute.\n\n"
        "When to use:\n"
        "- Creating new files from scratch.\n"
        "- Replacing the entire contents of a file.\n\n"
        "When NOT to use:\n"
        "- Making small, targeted changes to an existing file — use `edit` instead, which is safer and "
        "preserves surrounding content."
    ),
    params=Params(
        content=String(description="File content to write. May be empty string to create an empty file."),
        path=String(min_length=1, check=_blocks_need_md),
    ),
    run=run,
    main_arg="path",
    body_arg="content",
    spec_differences=(
        SpecDifference(
            "description",
            "points at `edit` for small changes; the original names `str-replace` there while edit is disabled",
            'spec "Built-in tools": "CireilClaw 2.0.0 removes str-replace" (reference §10 #1)',
            when="edit = false",
        ),
    ),
)
