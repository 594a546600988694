"""Which files read treats as pictures or videos, and their media types."""

from __future__ import annotations

import posixpath

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".avif": "image/avif",
    ".heic": "image/heic",
    ".heif": "image/heif",
}
VIDEO_TYPES = {
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".mov": "video/quicktime",
}


def media_kind(path: str) -> tuple[str, str] | None:
    """("image" | "video", media type) by extension (case-insensitive), or None for text."""
    ext = posixpath.splitext(path)[1].lower()
    if ext in IMAGE_TYPES:
        return "image", IMAGE_TYPES[ext]
    if ext in VIDEO_TYPES:
        return "video", VIDEO_TYPES[ext]
    return None


# A picture or video read goes whole into the next request (base64: a third more). The spec leaves media out
# of read's 256 KiB text limit; without any limit a sparse 300 MB file (`truncate -s` from exec) was read
# into memory and queued whole. 20 MiB is what the largest provider limits for one inline item allow.
MEDIA_READ_LIMIT = 20 * 1024 * 1024


def media_too_big(path: str, size: int, kind: str) -> str:
    return (
        f"File '{path}' is {size} bytes, over the {MEDIA_READ_LIMIT}-byte limit (20 MiB) for a {kind} read into "
        "the conversation; it was not read."
    )


# Pictures and videos read outside a turn wait in the session for the next model call. Bounded so
# that reading the same 2 MB picture 100 times keeps one copy, and many different ones keep the newest.
PENDING_MEDIA_ITEMS = 16
PENDING_MEDIA_BYTES = 8 * 1024 * 1024  # base64 makes it ~11 MB in the request: no tens of MB


def queue_media(pending: list[dict], item: dict) -> None:
    """Append `item` (with bytes `data`) to `pending`: a repeat replaces the earlier copy, the oldest go first."""
    data = item["data"]
    for i, queued in enumerate(pending):
        if len(queued["data"]) == len(data) and queued["data"] == data:
            del pending[i]  # the same content again: moved to the end, never held twice
            break
    pending.append(item)
    total = sum(len(q["data"]) for q in pending)
    while len(pending) > 1 and (len(pending) > PENDING_MEDIA_ITEMS or total > PENDING_MEDIA_BYTES):
        total -= len(pending.pop(0)["data"])
