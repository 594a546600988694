"""read-skill: the full SKILL.md of one skill, frontmatter included (§4.7)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Params, String
from ..files.textfile import read_text
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    slug: str = args["slug"]
    sandbox = f"/skills/{slug}/SKILL.md"
    resolved = ctx.paths.resolve(sandbox)  # a slug like `../blocks` is refused here
    try:
        content = read_text(resolved, tool="read-skill")
    except ToolError as exc:
        if not exc.message.startswith(("ENOENT", "EISDIR")):
            raise
        raise ToolError(
            f"ENOENT: no such file or directory, open '{resolved.sandbox}'",
            hint="Skills are listed in your instructions; use the slug (the folder name) of one of them.",
        ) from None
    return {"content": content, "slug": slug, "success": True}


TOOL = Tool(
    name="read-skill",
    description=(
        "Load the full contents of a skill document by its slug. Skills are stored as "
        "/skills/{slug}/SKILL.md.\n\n"
        "Your available skills are listed in the system prompt by slug and description. Call this tool when "
        "you need the complete instructions, examples, and pitfalls for a skill before following its process.\n\n"
        'If you just need to browse available skills, use `list-dir` with path "/skills/" instead.'
    ),
    params=Params(
        slug=String(
            min_length=1,
            description='Skill identifier — the directory name under /skills/ (e.g. "code-review").',
        )
    ),
    run=run,
    main_arg="slug",
)
