"""download-attachments: save a user message's attachments into the sandbox (reference §4.17)."""

from __future__ import annotations

import posixpath

from ..base.errors import ToolError
from ..base.params import Params, String
from ..files import safefs
from ..files.atomic import write_sandbox_file
from ..toolkit.conversation_tools import require_channel, store_of
from ..toolkit.tool import Tool, ToolContext

UNSUPPORTED = "This channel does not support downloading attachments"


def safe_name(filename: str) -> str:
    name = posixpath.basename(filename.replace("\\", "/"))
    if name in ("", ".", ".."):
        raise ToolError(f"Attachment has an invalid filename: {filename}")
    return name


async def run(args: dict, ctx: ToolContext) -> dict:
    require_channel(ctx, UNSUPPORTED)
    store = store_of(ctx, "download-attachments")
    message_id: str = args["message_id"]
    known = any(m.get("id") == message_id for m in ctx.session.history)
    if not known and store.find_message(ctx.session.id, message_id) is None:
        raise ToolError(f"Message not found: {message_id}", hint="Give the id of a user message of this conversation.")
    target_dir = args["to"].rstrip("/") or "/"
    saved: list[str] = []
    for meta, data in store.attachments(ctx.session.id, message_id):
        name = safe_name(meta["filename"])
        resolved = ctx.paths.resolve_for_write(posixpath.join(target_dir, f"{message_id}-{name}"))
        if safefs.stat_entry(resolved.target) is not None:
            raise ToolError(f"File already exists at {resolved.sandbox}", hint="Choose another path with `to`.")
        try:  # exclusive: never overwrite, not even a file made just now; whole or not at all
            write_sandbox_file(resolved, data, resolved.sandbox, exclusive=True)
        except ToolError as exc:
            if exc.message.startswith("File already exists"):
                raise ToolError(exc.message, hint="Choose another path with `to`.") from None
            raise
        saved.append(resolved.sandbox)  # earlier files stay written when a later one fails (reference)
    return {"count": len(saved), "saved": saved, "success": True}


TOOL = Tool(
    name="download-attachments",
    description=(
        "Download all file attachments from a message into the sandbox. Returns the list of saved sandbox "
        "paths.\n\n"
        "Only works on platforms that support attachment downloads (check capabilities in system prompt)."
    ),
    params=Params(
        message_id=String(min_length=1, description="ID of the message whose attachments to download."),
        to=String(min_length=1, description="Sandbox directory path to save files into (e.g. /workspace/downloads)."),
    ),
    run=run,
    main_arg="message_id",
)
