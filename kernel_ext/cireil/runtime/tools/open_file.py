"""open-file: pin a whole file, or some of its sections, into the agent's context (§4.4)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Array, Boolean, Params, String
from ..files.textfile import READ_LIMIT, over_limit, read_text, stat_path
from ..toolkit.section_ids import unknown_ids_error
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    from ..outline import build_outline  # only calls need it, not loading the agent

    path: str = args["path"]
    sections: list[str] | None = args.get("sections")
    close: list[str] | None = args.get("closeSections")
    if args.get("all") and (sections is not None or close is not None):
        raise ToolError(
            "`all` is mutually exclusive with `sections` and `closeSections`.",
            hint="Pin every section with all=true, or name sections to pin or unpin.",
        )
    found = stat_path(ctx.paths, path)
    if not found.is_file:
        raise ToolError("Path is a directory or not a standard file.", hint="Only files can be pinned.")
    if found.size > READ_LIMIT:  # it would be sent whole with every model call: 30 MB per request
        raise over_limit(path, found.size)
    key = found.resolved.sandbox
    session = ctx.session
    active = list(session.active_sections.get(key, ()))
    if close is not None:
        outline = build_outline(key, read_text(found))
        known = {s["id"] for s in outline["sections"]} if outline else set()
        unknown = [s for s in close if s not in known and s not in active]
        if unknown:  # checked before anything changes
            raise unknown_ids_error(unknown, outline)
        remaining = [s for s in active if s not in close]
        if remaining:
            session.active_sections[key] = remaining
        else:
            session.active_sections.pop(key, None)
        return {"activeSections": remaining, "path": path, "success": True}
    chosen: list[str] = []
    if args.get("all") or sections is not None:
        outline = build_outline(key, read_text(found))
        if outline is not None:
            ids = [s["id"] for s in outline["sections"]]
            if sections is not None:
                unknown = [s for s in sections if s not in ids]
                if unknown:  # checked before the file is opened: a failed call changes nothing
                    raise unknown_ids_error(unknown, outline)
                chosen = list(dict.fromkeys(sections))
            else:
                chosen = ids
    if key not in session.opened_files:
        session.opened_files.append(key)
    if chosen:
        session.active_sections[key] = chosen
    else:
        session.active_sections.pop(key, None)
    out: dict = {"open": list(session.opened_files), "path": path, "success": True}
    if chosen:
        out = {"activeSections": chosen, **out}
    return out


TOOL = Tool(
    name="open-file",
    description=(
        "Pin a file to the system prompt so its full contents are included in every subsequent turn. The "
        "file stays pinned until you call `close-file`.\n\n"
        "For large files, you can provide `sections` to open only specific sections from the file outline "
        "(as returned by `read`), or use `all` to open every section at once. Use `closeSections` to remove "
        "sections without closing the entire file. If `sections` is omitted, the entire file is pinned.\n\n"
        "When to use:\n"
        "- You need to reference or edit a file across multiple turns and want its contents always visible.\n\n"
        "When NOT to use:\n"
        "- You only need to see a file once — use `read` instead to avoid wasting context space.\n\n"
        "The file must exist at the given path. Allowed path roots: /workspace/, /memories/, /blocks/, "
        "/skills/.\n"
        "Note that paths used here *must* be absolute."
    ),
    params=Params(
        all=Boolean(
            required=False,
            description=(
                "Open all sections from the file outline. Mutually exclusive with `sections` and `closeSections`."
            ),
        ),
        closeSections=Array(
            items=String(min_length=1),
            min_items=1,
            required=False,
            description="Section IDs to close. Removes previously opened sections from context.",
        ),
        path=String(min_length=1, description="Sandbox path to pin (e.g. /workspace/config.json)."),
        sections=Array(
            items=String(min_length=1),
            min_items=1,
            required=False,
            description="Section IDs to open from the file outline. If omitted, the entire file is opened.",
        ),
    ),
    run=run,
    main_arg="path",
)
