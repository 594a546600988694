"""Re-encoding pictures that model APIs do not take (reference §4.3, §8.4).

Chat-completions APIs take PNG, JPEG, GIF and WebP. Anything else read attaches (AVIF, HEIC/HEIF, BMP,
TIFF) is decoded and sent as WebP at quality 90, as upstream does; a provider with `useJpegForImages`
gets JPEG instead. Pillow (and pillow-heif for HEIC/HEIF) is imported here, on the first picture that
needs it, never when the extension loads.
"""

from __future__ import annotations

import hashlib
import io
from collections import OrderedDict
from typing import Any

from ..base.errors import ToolError

SENDABLE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
QUALITY = 90  # upstream's WebP quality; used for JPEG too
MAX_PIXELS = 64_000_000  # a decoded picture costs 4 bytes a pixel: refuse a decompression bomb before decoding
_HEIF_TYPES = frozenset({"image/heic", "image/heif"})
_JPEG_CACHE_SIZE = 64


class ImageConversionError(ToolError):
    """The picture cannot be decoded or re-encoded; says which file and why."""


def _pillow(media_type: str) -> Any:
    from PIL import Image

    if media_type in _HEIF_TYPES:
        import pillow_heif

        pillow_heif.register_heif_opener()  # idempotent; Pillow itself has no HEIC decoder
    return Image


def _decode(data: bytes, media_type: str, what: str) -> Any:
    image_mod = _pillow(media_type)
    from PIL import ImageOps

    try:
        image = image_mod.open(io.BytesIO(data))
        width, height = image.size
        if width * height > MAX_PIXELS:
            raise ImageConversionError(
                f"{what} is {width}x{height} pixels, over the {MAX_PIXELS:,}-pixel limit for pictures",
                hint="Scale it down first (for example with exec, if an image tool is allowed) and read the copy.",
            )
        image.seek(0)  # an animation sends its first frame, as a still picture
        image = ImageOps.exif_transpose(image)  # phones store the rotation apart from the pixels
        image.load()
    except ImageConversionError:
        raise
    except Exception as exc:  # a truncated or lying file: a tool failure, never a crash
        raise ImageConversionError(
            f"{what} cannot be decoded as {media_type}: {type(exc).__name__}: {exc}",
            hint="Check that the file is a complete picture of the type its extension says.",
        ) from None
    return image


def _encode(image: Any, fmt: str) -> bytes:
    alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
    if fmt == "JPEG":
        if alpha:  # JPEG has no transparency: put the picture on white, as a viewer would show it
            from PIL import Image

            rgba = image.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            image = flat
        elif image.mode != "RGB":
            image = image.convert("RGB")
    elif image.mode not in ("RGB", "RGBA"):
        image = image.convert("RGBA" if alpha else "RGB")
    out = io.BytesIO()
    image.save(out, format=fmt, quality=QUALITY)
    return out.getvalue()


def sendable(data: bytes, media_type: str, what: str) -> tuple[bytes, str]:
    """The picture as model APIs take it: unchanged when they do, else re-encoded as WebP."""
    if media_type in SENDABLE:
        return data, media_type
    return _encode(_decode(data, media_type, what), "WEBP"), "image/webp"


_jpeg_cache: OrderedDict[bytes, bytes] = OrderedDict()


def as_jpeg(data: bytes, media_type: str) -> bytes:
    """JPEG bytes for a provider that asks for them; remembered, since every request re-sends the history."""
    if media_type == "image/jpeg":
        return data
    key = hashlib.blake2b(data, digest_size=16).digest()
    found = _jpeg_cache.get(key)
    if found is None:
        found = _encode(_decode(data, media_type, "a picture in the history"), "JPEG")
        _jpeg_cache[key] = found
        while len(_jpeg_cache) > _JPEG_CACHE_SIZE:
            _jpeg_cache.popitem(last=False)
    else:
        _jpeg_cache.move_to_end(key)
    return found
