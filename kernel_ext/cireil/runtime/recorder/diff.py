"""What changed between two requests of a turn: messages added and removed, tool results pruned or
stubbed, the opened files re-rendered, tools the breaker disabled, the metadata message.

Messages are matched by what they are (a tool result by its call id, the opened-files message, the
metadata message, an assistant message by its calls), not by position: pruning moves everything."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

OPENED_FILES = "<opened_files>"
METADATA = "Current date: "


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or () if isinstance(p, dict) and p.get("type") == "text")


def kind_of(message: dict, index: int) -> str:
    """A short name for what a message is: system, metadata, opened files, tool result, ..."""
    role = message.get("role")
    if role == "system":
        return "system prompt" if index == 0 else "system reminder"
    if role == "tool":
        return "tool result"
    if role == "assistant":
        return "assistant"
    text = _text(message)
    if text.startswith(METADATA):
        return "metadata"
    if text.startswith(OPENED_FILES):
        return "opened files"
    return "user"


def _identity(message: dict, index: int) -> tuple:
    kind = kind_of(message, index)
    if kind == "tool result":
        return (kind, message.get("tool_call_id"))
    if kind == "assistant" and message.get("tool_calls"):
        return (kind, tuple(c.get("id") for c in message["tool_calls"]))
    if kind in ("system prompt", "system reminder", "metadata", "opened files"):
        return (kind,)
    return (kind, json.dumps(message, sort_keys=True, default=str))  # matched only by equal content


def _keyed(messages: list[dict]) -> dict[tuple, tuple[int, dict]]:
    out: dict[tuple, tuple[int, dict]] = {}
    for i, m in enumerate(messages):
        key = _identity(m, i)
        while key in out:  # the same message twice (a repeated "ok"): the second is its own entry
            key = (*key, "again")
        out[key] = (i, m)
    return out


@dataclass
class Change:
    kind: str  # tool result | opened files | metadata | system prompt | assistant | ...
    before: dict
    after: dict

    @property
    def stubbed(self) -> bool:
        """A tool result replaced by the pruning stub ({"superseded": true, "reason": ...})."""
        return self.kind == "tool result" and '"superseded":true' in str(self.after.get("content", ""))


@dataclass
class StepDiff:
    added: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)  # left the window (pruned turns)
    changed: list[Change] = field(default_factory=list)
    tools_disabled: list[str] = field(default_factory=list)
    tools_enabled: list[str] = field(default_factory=list)
    kinds: dict[int, str] = field(default_factory=dict, repr=False)  # id(message) -> what it is (kind_of)

    def kind(self, message: dict) -> str:
        """What an added or removed message is: system prompt, metadata, tool result, user, ..."""
        return self.kinds.get(id(message)) or kind_of(message, 1)

    @property
    def stubbed(self) -> list[Change]:
        return [c for c in self.changed if c.stubbed]

    @property
    def metadata(self) -> Change | None:
        return next((c for c in self.changed if c.kind == "metadata"), None)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.tools_disabled or self.tools_enabled)

    def lines(self) -> list[str]:
        """One line per change, for text views."""
        out = [f"+ {self.kind(m)}: {_brief(m)}" for m in self.added]
        out += [f"- {self.kind(m)}: {_brief(m)}" for m in self.removed]
        for c in self.changed:
            what = "stubbed by pruning" if c.stubbed else "re-rendered" if c.kind == "opened files" else "changed"
            out.append(f"~ {c.kind} {what}: {_brief(c.after)}")
        out += [f"✕ tool disabled: {name}" for name in self.tools_disabled]
        out += [f"+ tool offered again: {name}" for name in self.tools_enabled]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "(no change)"


def _brief(message: dict, limit: int = 100) -> str:
    if message.get("role") == "assistant" and message.get("tool_calls"):
        text = ", ".join(c.get("function", {}).get("name", "?") for c in message["tool_calls"])
    elif message.get("role") == "tool":
        text = str(message.get("content", ""))
    else:
        text = _text(message)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tool_names(body: dict | None) -> list[str]:
    # OpenAI-shaped {"function": {"name"}}, or a provider kind that names its tools at the top
    return [(t.get("function") or {}).get("name") or t.get("name", "") for t in (body or {}).get("tools") or ()]


def _blocks_text(blocks: object) -> str:
    if isinstance(blocks, str):
        return blocks
    return "".join(b.get("text", "") for b in blocks or () if isinstance(b, dict) and "text" in b)


def _from_messages_api(body: dict) -> list[dict]:
    """Anthropic's Messages API: the system prompt at the top, tool results as blocks of user turns and
    adjacent turns merged; split back into one message per thing so each is matched on its own."""
    out: list[dict] = [{"role": "system", "content": _blocks_text(body.get("system"))}]
    for message in body.get("messages") or ():
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if message.get("role") == "assistant":
            calls = [
                {"id": b.get("id"), "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input"))}}
                for b in blocks or ()
                if b.get("type") == "tool_use"
            ]
            out.append(
                {"role": "assistant", "content": _blocks_text(blocks), **({"tool_calls": calls} if calls else {})}
            )
            continue
        for b in blocks or ():
            if b.get("type") == "tool_result":
                out.append(
                    {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _blocks_text(b.get("content"))}
                )
            else:
                out.append({"role": "user", "content": [b]})
    return out


def _from_responses_api(body: dict) -> list[dict]:
    """The Responses API (openai-codex): `instructions` and `input` items; an assistant's calls, reasoning
    and text between two other items are one assistant message, as in the other kinds."""
    out: list[dict] = [{"role": "system", "content": body.get("instructions") or ""}]
    assistant: dict | None = None
    for item in body.get("input") or ():
        kind, role = item.get("type"), item.get("role")
        if kind in ("function_call", "reasoning") or (kind == "message" and role == "assistant"):
            if assistant is None:
                assistant = {"role": "assistant", "content": ""}
                out.append(assistant)
            if kind == "function_call":
                call = {
                    "id": item.get("call_id"),
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")},
                }
                assistant.setdefault("tool_calls", []).append(call)
            elif kind == "message":
                assistant["content"] += _blocks_text(item.get("content"))
            continue
        assistant = None
        if kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif kind == "message":
            texts = [
                {"type": "text", "text": c.get("text", "")} if "text" in c else c for c in item.get("content") or ()
            ]
            out.append({"role": role, "content": texts})
    return out


def request_messages(body: dict | None) -> list[dict]:
    """A request's conversation as chat-completions messages, whichever provider kind's body it is."""
    body = body or {}
    if "input" in body and "messages" not in body:
        return _from_responses_api(body)
    if "system" in body:
        return _from_messages_api(body)
    return list(body.get("messages") or ())


def diff_requests(prev: dict | None, cur: dict) -> StepDiff:
    before = _keyed(request_messages(prev))
    after = _keyed(request_messages(cur))
    diff = StepDiff()
    diff.kinds = {id(m): key[0] for keyed in (before, after) for key, (_, m) in keyed.items()}
    for key, (_, message) in after.items():
        old = before.get(key)
        if old is None:
            diff.added.append(message)
        elif old[1] != message:
            diff.changed.append(Change(key[0], old[1], message))
    diff.removed = [m for key, (_, m) in before.items() if key not in after]
    if prev is not None:
        was, now = _tool_names(prev), _tool_names(cur)
        diff.tools_disabled = [n for n in was if n not in now]
        diff.tools_enabled = [n for n in now if n not in was]
    return diff
