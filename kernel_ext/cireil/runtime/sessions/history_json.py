"""cireil's in-memory messages <-> the original runtime's `sessions.history` JSON (upstream-formats §4.5).

Everything the original can express maps both ways without loss: a message read from its history
and written back unchanged gives the same JSON (keys it has that cireil does not use ride along in
`_`-prefixed keys of the in-memory message). What cireil keeps beyond the original's format (reactions,
token usage, notice/media flags, ids a Discord history cannot hold) is returned as per-message
extras for cireil's side store. Images go to `images/<blake3><ext>` (§4.7) through an ImageSink.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

ROLES = ("user", "assistant", "toolResponse", "system")
USER_BLOCKS = frozenset({"text", "image_ref", "video_ref", "image", "video"})
ASSISTANT_BLOCKS = frozenset({"text", "image_ref", "image", "toolCall", "thinking", "redacted_thinking"})
# top-level keys of an in-memory message that the original's history holds (the rest are extras)
_UPSTREAM_KEYS = frozenset(
    {"id", "role", "timestamp", "content", "messageIds", "persist", "toolCallId", "name", "output"}
)
_UP_MESSAGE_KEYS = frozenset({"role", "content", "timestamp", "id", "messageIds", "persist"})
EXTENSIONS = {"image/gif": ".gif", "image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp"}
SNOWFLAKE = re.compile(r"[0-9]+\Z")
# the fields of each block type (§4.5); what else a part carries is cireil's and goes to its side file
BLOCK_KEYS = {
    "text": frozenset({"content", "discord", "type"}),
    "image_ref": frozenset({"id", "mediaType", "type"}),
    "video_ref": frozenset({"attachmentId", "mediaType", "type", "url"}),
    "toolCall": frozenset({"id", "input", "name", "type"}),
    "thinking": frozenset({"thinking", "signature", "type"}),
    "redacted_thinking": frozenset({"data", "type"}),
}


class HistoryFormatError(ValueError):
    """A history the original's loader (or its session tools) would reject; the message says where."""


def ext_for(media_type: str) -> str:
    return EXTENSIONS.get(media_type, ".bin")


# the stored milliseconds a time is shown for: inside datetime's years 1-9999 with a day to spare for the local
# offset; a number outside is kept as it is, like a time that is not a number (a hand-edited row's)
MIN_MS = -62135596800000 + 86400000
MAX_MS = 253402300799999 - 86400000


def ms_to_iso(ms: int) -> str:
    spec = "seconds" if ms % 1000 == 0 else "milliseconds"
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone().isoformat(timespec=spec)


def iso_to_epoch(value: Any) -> float | None:
    """ISO-8601 -> seconds; a time without an offset is taken as local time. None when unparseable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo else parsed.astimezone().timestamp()


def iso_to_ms(value: Any) -> int | None:
    seconds = iso_to_epoch(value)
    return None if seconds is None else round(seconds * 1000)


def _finite(value: Any) -> Any:
    """JSON.parse has no NaN or Infinity: such numbers become null (what JSON.stringify writes for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Like JSON.stringify: compact, non-ASCII as it is (query-sessions' LIKE prefilter sees the text)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- reading ------------------------------------------------------------------------------------------


ImageLoader = Callable[[str, str], bytes | None]  # (blake3 id, media type) -> bytes, None when missing


def _decode_block(block: Any, role: str, where: str, load_image: ImageLoader) -> dict:
    if not isinstance(block, dict):
        raise HistoryFormatError(f"{where}: a content block is {type(block).__name__}, not an object")
    kind = block.get("type")
    allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS if role == "assistant" else {"text"}
    if kind not in allowed:
        raise HistoryFormatError(f"{where}: unknown block type {kind!r} in a {role} message")
    rest = {k: v for k, v in block.items() if k != "type"}
    if kind == "text":
        text = rest.pop("content", None)
        if not isinstance(text, str):
            raise HistoryFormatError(f"{where}: a text block whose content is not a string")
        return {"type": "text", "text": text, **rest}
    if kind == "image_ref":
        ref, media_type = rest.get("id"), rest.get("mediaType")
        if not isinstance(ref, str) or not isinstance(media_type, str):
            raise HistoryFormatError(f"{where}: an image_ref without a string id and mediaType")
        data = load_image(ref, media_type)
        if data is None:  # the original drops such a block at load; cireil keeps it to write it back
            return {"type": "image_ref", **rest}
        extra = {k: v for k, v in rest.items() if k not in ("id", "mediaType")}
        encoded = base64.b64encode(data).decode("ascii")
        return {"type": "image", "mediaType": media_type, "data": encoded, "ref": ref, **extra}
    if kind == "toolCall":
        return {"type": "toolCall", **rest}
    if kind == "thinking":
        return {"type": "thinking", **rest}
    if kind == "redacted_thinking":
        return {"type": "redactedThinking", **rest}
    return {"type": kind, **rest}  # video_ref, raw image/video: kept as the original wrote them


def decode_message(up: Any, index: int, load_image: ImageLoader) -> dict:
    where = f"message {index}"
    if not isinstance(up, dict) or "role" not in up or "content" not in up:
        raise HistoryFormatError(f"{where} is not a message object with role and content")
    role = up["role"]
    if role not in ROLES:
        raise HistoryFormatError(f"{where}: unknown role {role!r}")
    content = up["content"]
    mem: dict[str, Any] = {}
    if "id" in up:
        mem["id"] = up["id"]
    else:
        mem["id"] = f"#{index}"  # a name for read-history and prune-boundaries; never written back
        mem["_noid"] = True
    mem["role"] = role
    stamp = up.get("timestamp")
    if isinstance(stamp, int) and not isinstance(stamp, bool) and MIN_MS <= stamp <= MAX_MS:
        mem["timestamp"] = ms_to_iso(stamp)
    else:
        mem["timestamp"] = None
        if "timestamp" in up:
            mem["_ts"] = stamp
    if role == "toolResponse":
        if not isinstance(content, dict) or content.get("type") != "toolResponse":
            raise HistoryFormatError(f"{where}: a toolResponse message without one toolResponse block")
        block = dict(content)
        block.pop("type")
        mem["toolCallId"] = block.pop("id", None)
        mem["name"] = block.pop("name", None)
        mem["output"] = block.pop("output", None)
        if block:
            mem["_block"] = block
    else:
        if isinstance(content, str):
            raise HistoryFormatError(f"{where}: content is a bare string, not block objects")
        blocks = content if isinstance(content, list) else [content]
        mem["content"] = [_decode_block(b, role, where, load_image) for b in blocks]
        if isinstance(content, list) and len(content) == 1:
            mem["_array"] = True
    for key in ("messageIds", "persist"):
        if key in up:
            mem[key] = up[key]
    unknown = {k: v for k, v in up.items() if k not in _UP_MESSAGE_KEYS}
    if unknown:
        mem["_up"] = unknown
    return mem


def parse_history(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise HistoryFormatError(f"history is not valid JSON ({exc})") from None
    if not isinstance(value, list):
        raise HistoryFormatError(f"history is a JSON {type(value).__name__}, not an array")
    return value


_GAP = re.compile(r"[ \t\n\r]*")  # JSON's whitespace


def parse_history_spans(text: str) -> tuple[list[Any], list[tuple[int, int]] | None]:
    """parse_history, with where each element's text lies in `text` (None when the array cannot be split so):
    an unchanged element is written back as those very characters, so a write costs what changed (store.py)."""
    decoder = json.JSONDecoder()
    elements: list[Any] = []
    spans: list[tuple[int, int]] = []
    try:
        at = _GAP.match(text, 0).end()
        if text[at : at + 1] != "[":
            raise ValueError("not an array")
        at = _GAP.match(text, at + 1).end()
        if text[at : at + 1] == "]":
            end = at + 1
        else:
            while True:
                value, end = decoder.raw_decode(text, at)
                elements.append(value)
                spans.append((at, end))
                at = _GAP.match(text, end).end()
                if text[at : at + 1] == ",":
                    at = _GAP.match(text, at + 1).end()
                    continue
                if text[at : at + 1] != "]":
                    raise ValueError("no , or ] after an element")
                end = at + 1
                break
        if _GAP.match(text, end).end() != len(text):
            raise ValueError("text after the array")
    except (ValueError, RecursionError):
        return parse_history(text), None  # says what is wrong as parse_history does, or reads it without spans
    return elements, spans


# -- writing ------------------------------------------------------------------------------------------


ImageSink = Callable[[bytes, str], str]  # (bytes, media type) -> blake3 id, file written before the row


def _encode_block(part: dict, sink: ImageSink, refs: list[tuple[str, str]]) -> dict | None:
    kind = part.get("type")
    rest = {k: v for k, v in part.items() if k != "type"}
    if kind == "text":
        text = rest.pop("text", "")
        return {"content": text if isinstance(text, str) else str(text), **rest, "type": "text"}
    if kind == "image":
        media_type = str(rest.get("mediaType") or "application/octet-stream")
        ref = rest.get("ref")
        if not isinstance(ref, str):
            data = rest.get("data")
            raw = data if isinstance(data, bytes) else base64.b64decode(data or "")
            ref = sink(raw, media_type)
            part["ref"] = ref  # hashed once: later saves of this session reuse it
        refs.append((ref, media_type))
        extra = {k: v for k, v in rest.items() if k not in ("data", "ref", "mediaType")}
        return {"id": ref, "mediaType": media_type, **extra, "type": "image_ref"}
    if kind == "video" and "data" in rest:
        return None  # the original never stores video bytes (§4.5); cireil keeps what it can in extras
    if kind == "redactedThinking":
        return {"data": rest.get("data") or "", "type": "redacted_thinking"}
    if kind == "image_ref":
        refs.append((str(rest.get("id")), str(rest.get("mediaType"))))
    return {**rest, "type": kind}


def encode_message(mem: dict, channel: str, sink: ImageSink, refs: list[tuple[str, str]]) -> tuple[dict | None, dict]:
    """(the original's JSON object or None when it keeps nothing of it, cireil-only extras)."""
    role = mem.get("role")
    extras = {k: v for k, v in mem.items() if k not in _UPSTREAM_KEYS and not k.startswith("_")}
    if role not in ("user", "assistant", "toolResponse") or mem.get("persistent", True) is False:
        return None, extras
    up: dict[str, Any] = {}
    if role == "toolResponse":
        block = {"id": mem.get("toolCallId"), "name": mem.get("name"), "output": mem.get("output")}
        up["content"] = {**block, **mem.get("_block", {}), "type": "toolResponse"}
    else:
        parts = mem.get("content")
        if isinstance(parts, str):
            parts = [{"type": "text", "text": parts}]
        blocks = []
        part_extras: dict[str, dict] = {}
        for index, part in enumerate(parts or ()):
            block = _encode_block(part, sink, refs)
            if block is None:
                continue
            allowed = BLOCK_KEYS.get(block["type"])
            if allowed is not None:  # keys of cireil's own (a note marker, say) never reach the original
                own = {k: block.pop(k) for k in list(block) if k not in allowed}
                if own:
                    part_extras[str(index)] = own
            blocks.append(block)
        if part_extras:
            extras["parts"] = part_extras
        dropped = [p.get("mediaType") for p in parts or () if p.get("type") == "video" and "data" in p]
        if dropped:
            extras["droppedVideos"] = dropped
        if role == "assistant" and not blocks:
            return None, extras  # the original drops an empty assistant message at load
        up["content"] = blocks[0] if len(blocks) == 1 and not mem.get("_array") else blocks
    message_id = mem.get("id")
    if isinstance(message_id, str) and message_id and not mem.get("_noid"):
        if channel == "discord" and not SNOWFLAKE.match(message_id):
            extras["id"] = message_id  # a Discord history holds snowflakes only (§7)
        else:
            up["id"] = message_id
    for key in ("messageIds", "persist"):
        if key in mem:
            up[key] = mem[key]
    up["role"] = role
    stamp = iso_to_ms(mem.get("timestamp"))
    if stamp is not None:
        up["timestamp"] = stamp
        if ms_to_iso(stamp) != mem["timestamp"]:
            extras["timestamp"] = mem["timestamp"]  # the offset it was written with, for cireil's views
    elif "_ts" in mem:
        up["timestamp"] = mem["_ts"]
    up.update(mem.get("_up", {}))
    return up, extras
