"""A tiny rule-based stand-in for a language model, so the agent-turn tutorial runs offline.

It answers chat-completion requests for the demo agent (Wren) by looking at the last thing the
person said and at the tool results of the current turn: it lists the workspace, reads the
volunteer list, schedules a reminder, reacts, and always ends with a respond. It is deliberately
simple, and it is not a model: point config/engine.toml at a real endpoint for real answers.

    from cireil.testing.scripted_llm import ScriptedLLM
    from cireil.testing.demo_model import wren
    llm = ScriptedLLM(default=wren).start()
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from .scripted_llm import Reply, reply


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or () if p.get("type") == "text")


def _said(body: dict) -> tuple[str, list[dict]]:
    """The person's last message and the tool results that came after it (this turn's)."""
    said, results = "", []
    for message in body["messages"]:
        if message["role"] == "user":
            text = _text(message)
            if text.startswith(("Current date:", "<opened_files>")):
                continue  # the runtime's context messages, not the person
            said, results = text, []
        elif message["role"] == "tool":
            results.append(json.loads(message["content"]))
    return said, results


def _respond(content: str) -> Reply:
    return reply.tool_calls(("respond", {"content": content}))


def _after(said: str, last: dict) -> Reply:
    tool = last.get("name")
    if last.get("success") is False:
        return _respond(f"That did not work: {last.get('error')}")
    if tool == "list-dir":
        names = ", ".join(f"`{e['name']}`" for e in last.get("entries", []))
        return _respond(f"Your workspace has {len(last.get('entries', []))} entries: {names}.")
    if tool == "read":
        lines = [line for line in str(last.get("content", "")).splitlines() if line.strip()]
        people: list[str] = []
        for line in lines:  # a bullet goes on over its indented continuation lines: keep it whole
            if line.lstrip().startswith(("-", "*")):
                people.append(line.lstrip("-* ").split(" — ")[0].strip())
            elif people and line.startswith((" ", "\t")):
                people[-1] += " " + line.strip()
        if people:
            return _respond("The volunteers I know of:\n\n" + "\n".join(f"- {p}" for p in people[:8]))
        return _respond("The file starts with:\n\n> " + (lines[0] if lines else "(nothing)"))
    if tool == "schedule":
        return _respond(f"Done: I will remind you at {last.get('at')} (job `{last.get('id')}`).")
    if tool == "react":
        return _respond("Glad to help!")
    if tool == "download-attachments":
        return _respond("Saved " + ", ".join(f"`{p}`" for p in last.get("saved", [])) + ".")
    if tool == "query-sessions":
        return _respond(f"I found {last.get('totalMatches', 0)} earlier messages about that.")
    return _respond("Done.")


def wren(body: dict) -> Reply:
    """Answer one request the way the tutorial expects: one tool, then a respond."""
    said, results = _said(body)
    if results:
        return _after(said, results[-1])
    lower = said.lower()
    if str(body.get("prompt_cache_key", "")).startswith("cron:"):  # a scheduled job's own turn: deliver it
        return _respond(f"⏰ Reminder: {said}")
    if "earlier" in lower or "did we" in lower:
        return reply.tool_calls(("query-sessions", {"query": "*volunteer*"}))
    attached = re.search(r"\(message_id (m[0-9a-f]+)\)", said)
    if attached:
        return reply.tool_calls(("download-attachments", {"message_id": attached.group(1), "to": "/workspace/inbox"}))
    if lower.startswith("remind"):
        at = (datetime.now(UTC) + timedelta(seconds=2)).isoformat(timespec="seconds")
        return reply.tool_calls(("schedule", {"id": "water-seedlings", "at": at, "prompt": said}))
    if "workspace" in lower or "files" in lower:
        return reply.tool_calls(("list-dir", {"path": "/workspace"}))
    if "volunteer" in lower:
        return reply.tool_calls(("read", {"path": "/memories/volunteers.md"}))
    if "thank" in lower:
        return reply.tool_calls(("react", {"emoji": "🌱"}))
    return _respond(f"(scripted stand-in) You said: {said}")
