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
