"""read: a file's text, its outline when it is long, or a picture/video for the next model call (§4.3)."""

from __future__ import annotations

import asyncio

from ..base.errors import ToolError
from ..base.params import Boolean, Params, String
from ..files.imaging import SENDABLE, sendable
from ..files.media import MEDIA_READ_LIMIT, media_kind, media_too_big, queue_media
from ..files.sniff import SNIFF_BYTES, binary_kind, inspect_hint
from ..files.textfile import READ_LIMIT, decode, stat_path, too_big
from ..toolkit.tool import Tool, ToolContext


def _media_too_big(path: str, size: int, kind: str) -> ToolError:
    return ToolError(
        media_too_big(path, size, kind),
        hint="Make a smaller copy (for example with exec: a lower resolution, a shorter clip), then read that.",
    )


def refuse_binary(path: str, size: int, data: bytes) -> None:
    """A binary file that is not media is refused: the model gains nothing from a page of U+FFFD."""
    kind = binary_kind(data)
    if kind is not None:
        raise ToolError(
            f"'{path}' is not a text file: it looks like {kind} ({size} bytes). read returns text, "
            "and attaches pictures and videos; it does not return binary content.",
            hint=inspect_hint(path),
        )


async def run(args: dict, ctx: ToolContext) -> dict:
    from ..outline import build_outline  # only calls need it, not loading the agent

    path: str = args["path"]
    found = stat_path(ctx.paths, path)
    if found.is_dir:
        raise ToolError("EISDIR: illegal operation on a directory, read", hint="Use list-dir to look into a directory.")
    if not found.is_file:  # a FIFO or device: reading could block or never end
        raise ToolError(f"'{path}' is not a regular file.", hint="Only regular files can be read.")
    kind = media_kind(found.resolved.sandbox)
    if kind is not None:
        if found.size > MEDIA_READ_LIMIT:  # before reading: never loaded
            raise _media_too_big(path, found.size, kind[0])
        media_type, data = kind[1], found.read_bytes(MEDIA_READ_LIMIT)
        if len(data) > MEDIA_READ_LIMIT:  # grew between stat and read
            raise _media_too_big(path, len(data), kind[0])
        sent_type = media_type
        if kind[0] == "image" and media_type not in SENDABLE:  # AVIF, HEIC, BMP, TIFF: sent as WebP
            data, sent_type = await asyncio.to_thread(sendable, data, media_type, f"'{path}'")
        queue_media(ctx.session.pending_media, {"type": kind[0], "mediaType": sent_type, "path": path, "data": data})
        return {"mediaType": media_type, "path": path, "size": found.size, "success": True, "type": kind[0]}
    if found.size > READ_LIMIT:  # before reading: a huge file is never loaded, outlined or returned
        # its start says whether "extract an excerpt" makes sense
        refuse_binary(path, found.size, found.read_bytes(SNIFF_BYTES)[:SNIFF_BYTES])
        raise too_big(path, found.size)
    data = found.read_bytes(READ_LIMIT)
    if len(data) > READ_LIMIT:  # grew between stat and read
        raise too_big(path, len(data))
    refuse_binary(path, len(data), data)
    text = decode(data)
    if not args["raw"]:
        outline = build_outline(path, text)
        if outline is not None:
            return {"outline": outline, "path": path, "size": len(data), "success": True}
    return {"content": text, "path": path, "size": len(data), "success": True}


TOOL = Tool(
    name="read",
    path_effect="reads",
    description=(
        "Read the full contents of a file at the given sandbox path and return it as text.\n\n"
        "Image files are automatically converted to WebP and injected into your next turn as a visual — you "
        "will see the image, not raw bytes.\n\n"
        "Allowed path roots: /workspace/, /memories/, /blocks/, /skills/.\n"
        "Note that paths used here *must* be absolute.\n"
        "When to use:\n"
        "- Inspecting or reviewing file contents before editing.\n"
        "- Viewing images the user has placed in the workspace.\n\n"
        "When NOT to use:\n"
        "- To load a skill by its slug — use `read-skill` instead.\n"
        "- For files you plan to edit repeatedly — use `open-file` to pin them to context."
    ),
    params=Params(
        path=String(min_length=1, description="Sandbox path to read (e.g. /workspace/notes.txt)."),
        raw=Boolean(
            default=False, description="Always gives the raw content of the file, skipping the section subsystem."
        ),
    ),
    run=run,
    main_arg="path",
)
