"""A tools/call answer too big to hold: streamed to disk for the person, a preview and a note for the model.

A 100 MB answer used to be read whole (and then copied a few times) before the result cap cut it. The
transport now holds at most `Spill.threshold` bytes of one answer (a JSON body, or one SSE event); past
that the rest goes straight to a file in the agent's `.cireil/results/` (toolkit/resultcap.py's folder, outside
the sandbox), up to `DISK_LIMIT` bytes, and the call's result is the beginning as text with the same
`resultTruncated` note cap_result gives. Answers under the threshold are parsed as usual and cap_result
cuts them by structure, which reads better; the threshold is a small multiple of the result limit.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..toolkit.resultcap import open_saved, truncation_note

FACTOR = 4  # answers up to FACTOR x the result limit are parsed and cut by structure
DISK_LIMIT = 256 * 1024 * 1024  # bytes kept on disk of one answer; a server streaming forever stops here
SPILLED = object()  # key of the result dict a spilled answer becomes (JSON cannot make a non-string key)


@dataclass(frozen=True)
class Spill:
    """Where a call's oversized answer may go: the agent directory and the model's result limit in bytes."""

    agent_dir: Path
    limit: int
    tool: str
    call_id: str = ""

    @property
    def threshold(self) -> int:
        return self.limit * FACTOR


async def spill_rest(spill: Spill, head: list[bytes], rest: AsyncIterator[bytes], kind: str) -> dict[Any, Any]:
    """Write `head` then the rest of the body to disk; the result the model gets instead of the answer."""
    path, out = open_saved(spill.agent_dir, spill.tool, spill.call_id)
    size, cut = 0, False
    with out:
        for data in head:
            out.write(data)
            size += len(data)
        async for data in rest:
            if size + len(data) > DISK_LIMIT:
                out.write(data[: DISK_LIMIT - size])
                size, cut = DISK_LIMIT, True
                break
            out.write(data)
            size += len(data)
    note = truncation_note(size, spill.limit, path, cut_at=size if cut else None)
    note["answer"] = f"the server's {kind} answer, not parsed (too big to hold): what is kept is its raw text"
    preview = _preview(head, spill.limit // 2)
    return {SPILLED: True, "content": [{"type": "text", "text": preview}], "resultTruncated": note}


def _preview(head: list[bytes], budget: int) -> str:
    """The answer's beginning as text whose JSON (as the model is sent it) fits `budget` bytes, so that the
    result with its note stays under the limit and cap_result has nothing left to cut."""
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(b"".join(head)[:budget])
    while len(json.dumps(text, ensure_ascii=False).encode()) > budget:  # escapes and multi-byte characters
        text = text[: len(text) * 3 // 4]
    return text
