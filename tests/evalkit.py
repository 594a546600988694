"""Scenario files and scripted "models" for the eval tests."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

from cireil.testing.scripted_llm import Reply, reply


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


NOTES_SCENARIO = """\
    name = "notes"
    message = "what is in my notes?"

    [expect]
    order = "strict"
    forbid = ["write"]
    [[expect.call]]
    tool = "read"
    args = { path = "/workspace/notes.md" }

    [answer]
    contains = "milk"
"""


def last_user(body: dict) -> str:
    for m in reversed(body["messages"]):
        if m["role"] == "user":
            text = json.dumps(m["content"])
            if "Current date:" not in text and "<opened_files>" not in text:
                return text
    return ""


def tool_results(body: dict) -> list[dict]:
    """The tool results since the person's last message."""
    out: list[dict] = []
    for m in body["messages"]:
        if m["role"] == "user" and "Current date:" not in json.dumps(m["content"]):
            out = []
        elif m["role"] == "tool":
            out.append(json.loads(m["content"]))
    return out


def answer_from(results: list[dict]) -> Reply:
    last = results[-1]
    if last.get("success") is False:
        return reply.tool_calls(("respond", {"content": f"failed: {last.get('error')}"}))
    return reply.tool_calls(("respond", {"content": str(last.get("content", last))[:200]}))


def model(first_call):
    """A scripted model: `first_call(body)` picks the first tool call; then it answers with what it read."""

    def fn(body: dict) -> Reply:
        results = tool_results(body)
        if results:
            return answer_from(results)
        return reply.tool_calls(first_call(body))

    return fn


def tool_description(body: dict, name: str) -> str:
    for t in body.get("tools", []):
        if t["function"]["name"] == name:
            return t["function"]["description"]
    return ""


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root with its content hash (and every directory), to prove nothing changed."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "dir"
    return out
