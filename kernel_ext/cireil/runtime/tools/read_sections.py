"""read-sections: add sections of an opened file to the context (§4.5)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Array, Boolean, Params, String
from ..files.textfile import READ_LIMIT, over_limit, read_text, stat_path
from ..toolkit.section_ids import unknown_message
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    from ..outline import build_outline  # only calls need it, not loading the agent

    path: str = args["path"]
    sections: list[str] | None = args.get("sections")
    if args.get("all") and sections is not None:
        raise ToolError("`all` is mutually exclusive with `sections`.", hint="Pass all=true or a list of sections.")
    if not args.get("all") and sections is None:
        raise ToolError("Either `sections` or `all` must be provided.", hint="Name section ids, or pass all=true.")
    resolved = ctx.paths.resolve(path)
    key = resolved.sandbox
    if key not in ctx.session.opened_files:
        return {"error": f"File '{path}' is not open. Use 'open-file' first.", "path": path, "success": False}
    found = stat_path(ctx.paths, path)
    if found.size > READ_LIMIT:
        raise over_limit(path, found.size, "read-sections")
    outline = build_outline(key, read_text(found, tool="read-sections"))
    if outline is None:
        return {
            "message": "The file is below the outline threshold — the entire file is already in context.",
            "path": path,
            "success": True,
        }
    ids = [s["id"] for s in outline["sections"]]
    if sections is not None:
        unknown = [s for s in sections if s not in ids]
        if unknown:
            return {"error": unknown_message(unknown, outline), "path": path, "success": False}
    wanted = ids if args.get("all") else list(dict.fromkeys(sections or ()))
    active = list(ctx.session.active_sections.get(key, ()))
    added = [s for s in wanted if s not in active]
    out: dict = {"activeSections": active + added, "added": added}
    if not added:
        out["message"] = "All sections are already active."
    else:
        ctx.session.active_sections[key] = active + added
    return {**out, "path": path, "size": found.size, "success": True}


TOOL = Tool(
    name="read-sections",
    description=(
        "Add specific sections of an already-opened file to the active context. The file must have been "
        "opened via `open-file` and have an outline (i.e. be large enough to trigger outline generation).\n\n"
        "Use this when you opened only some sections and later need additional ones. The section IDs come "
        "from the file outline returned by `read`. Alternatively, use `all` to add every remaining section "
        "at once.\n\n"
        "When to use:\n"
        "- You opened a large file with `open-file` using `sections` and realize you need more context.\n"
        "- You want to incrementally load sections of a large document.\n\n"
        "When NOT to use:\n"
        "- To remove sections — use `open-file` with `closeSections`.\n"
        "- To read a file one-time — use `read`."
    ),
    params=Params(
        all=Boolean(
            required=False,
            description="Add all remaining sections from the file outline. Mutually exclusive with `sections`.",
        ),
        path=String(min_length=1, description="Sandbox path of a previously opened file with sections."),
        sections=Array(
            items=String(min_length=1),
            min_items=1,
            required=False,
            description="Section IDs to add to the active set for this file.",
        ),
    ),
    run=run,
    main_arg="path",
)
