"""write: create or overwrite a sandbox file (reference §4.9), atomically."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Params, String
from ..files import frontmatter
from ..files.atomic import write_sandbox_file
from ..files.paths import ResolvedPath, normalize
from ..files.textfile import decode, read_bytes
from ..toolkit.tool import Tool, ToolContext


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
    description=(
        "Create a file or overwrite it completely with the given content (parent folders are created). "
        "For changes to part of an existing file, prefer edit. Block files (/blocks, .md only) and skill "
        "SKILL.md files keep their frontmatter when the content is given without it."
    ),
    params=Params(
        path=String(min_length=1, check=_blocks_need_md, description="Absolute sandbox path of the file"),
        content=String(description="The complete new content of the file (may be empty)"),
    ),
    run=run,
    main_arg="path",
    body_arg="content",
)
