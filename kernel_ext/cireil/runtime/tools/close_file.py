"""close-file: unpin a file and all of its sections (§4.6)."""

from __future__ import annotations

from ..base.params import Params, String
from ..files.paths import normalize
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    path: str = args["path"]
    # No resolution on purpose: a file that was deleted or moved out of reach must still be closable.
    key = normalize(path) if path.startswith("/") else path
    session = ctx.session
    removed = key in session.opened_files
    session.opened_files[:] = [p for p in session.opened_files if p != key]
    session.active_sections.pop(key, None)
    return {"open": list(session.opened_files), "path": path, "removed": removed, "success": True}


TOOL = Tool(
    name="close-file",
    description=(
        "Unpin a file from the system prompt. Its contents will no longer be included in subsequent turns.\n\n"
        "Call this when you are done working with a pinned file to free context space. Has no effect if the "
        "file is not currently pinned."
    ),
    params=Params(path=String(min_length=1, description="Sandbox path of the pinned file to unpin.")),
    run=run,
    main_arg="path",
)
