"""The tool entries of a model request and the body's encoding: one place, shared by the provider (which
sends them) and toolcost.py (which prices them), and light enough to import without httpx."""

from __future__ import annotations

import json


def tool_definition(tool: dict) -> dict:
    """One entry of the request's `tools`, from {"name", "description", "parameters"} (also what
    `%cireil tools` prices: toolcost.py)."""
    # keys in the order the original CireilClaw serializes them (JS insertion order), so the bytes match
    return {
        "function": {
            "description": tool.get("description", ""),
            "name": tool["name"],
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
        },
        "type": "function",
    }


def encode_body(body: dict) -> bytes:
    """The bytes POSTed for a request body."""
    return json.dumps(body, ensure_ascii=False).encode()
