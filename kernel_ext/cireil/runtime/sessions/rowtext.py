"""One session's `history` text as stored, kept encoded between writes, so that a write costs what changed.

The original's row holds the whole history as one JSON array, rewritten whole at every save (upstream-formats
§4.5): that UPDATE is the floor. Everything above it grows with the history unless it is kept: each stored
element's text (as read from the row, or as cireil wrote it), which memory message it came from, and what
the side file needs of it. A write then encodes only the messages appended since the last one and those
changed in place through `Session.touch` (a superseded read, a reaction), and joins the kept texts.

A history that changed any other way (messages removed, replaced or reordered, a committed message after
one still in a turn) is encoded whole again, each message compared with its kept element, so an unchanged
message is still written back as the very characters it had.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import history_json as hj
from .messages import starts_with

Encode = Callable[[dict, list[tuple[str, str]]], tuple[dict | None, dict]]  # (message, refs sink) -> (up, extra)


@dataclass(slots=True)
class Kept:
    """One stored element: the memory message behind it (held, so its id() is never another's), the element,
    its text exactly as in the row, cireil's extras of it, and where it stands among the written ones."""

    message: dict
    up: dict
    text: str
    extra: dict
    index: int


@dataclass
class Plan:
    """What one write stores: built before the transaction, kept (`RowText.accept`) only once it committed."""

    texts: list[str]
    ups: list[dict]
    written: list[dict]  # the memory messages behind texts
    kept: dict[int, Kept]  # id(message) -> Kept, for every written message
    # every history message looked at, written or not, in order: held, so that no id() of one that left the
    # history can come back as another's
    order: list[dict]
    flags: list[int]  # 1 where that position was written
    extras: dict[int, tuple[str, dict]]  # written index -> (signature, extras)
    refs: list[tuple[str, str]]  # images named by what was encoded now (older ones have their rows)
    written_ids: set[str]
    first_change: int | None  # first written index whose text is new
    cursor: int
    conv: list[int] = field(default_factory=list)  # conv[i]: how many of written[: i + 1] are user or assistant
    history_text: str = ""
    hasher: Any = None  # indexbuild.prefix_hasher over history_text[:-1], for the side index's append-only check
    appended_only: bool = False


def signature(element: dict) -> str:
    """What ties cireil's extras to one stored message: its role, time and id (cheap; an edit of the text by
    the original keeps them, a different message at that position does not)."""
    content = element.get("content")
    call = content.get("id") if isinstance(content, dict) and content.get("type") == "toolResponse" else ""
    return f"{element.get('role')}|{element.get('timestamp')}|{element.get('id', '')}|{call}"


@dataclass
class RowText:
    """The kept encoding of one session's row; empty (everything encoded at the first write) for a new one."""

    kept: dict[int, Kept] = field(default_factory=dict)
    order: list[dict] = field(default_factory=list)
    flags: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    ups: list[dict] = field(default_factory=list)
    written: list[dict] = field(default_factory=list)
    extras: dict[int, tuple[str, dict]] = field(default_factory=dict)
    written_ids: set[str] = field(default_factory=set)
    conv: list[int] = field(default_factory=list)
    hasher: Any = None  # over "[" + ",".join(texts), or None until first needed
    text: str | None = None  # "[" + ",".join(texts) + "]", as last read or written

    @classmethod
    def loaded(
        cls,
        history: list[dict],
        elements: list,
        text: str,
        spans: list[tuple[int, int]] | None,
        extras: dict[int, dict],
    ) -> RowText:
        """As read from a row: message i is element i, whose text is text[spans[i]]."""
        if spans is None or len(spans) != len(history):
            texts = [hj.dumps(e) for e in elements]  # a row no span splits (rare): its elements, re-encoded
        else:
            texts = [text[start:end] for start, end in spans]
        kept = {
            id(message): Kept(message, element, texts[i], extras.get(i, {}), i)
            for i, (message, element) in enumerate(zip(history, elements, strict=True))
        }
        side = {i: (signature(elements[i]), extra) for i, extra in extras.items() if extra and i < len(elements)}
        ids = {e["id"] for e in elements if isinstance(e, dict) and isinstance(e.get("id"), str)}
        made = cls(
            kept,
            list(history),
            [1] * len(history),
            texts,
            list(elements),
            list(history),
            side,
            ids,
            _conversation_counts(history),
        )
        made.text = text if spans is not None and len(spans) == len(history) else None
        return made

    # -- planning -------------------------------------------------------------------------------------
    def plan(
        self, history: list[dict], cursor: int, touched: set[int], committed: set[int] | None, encode: Encode
    ) -> Plan:
        """The write of `history` (only messages in `committed`, when given); touched: id() of messages
        changed in place since the last write."""
        quick = self._quick(history, cursor, touched, committed, encode)
        return quick if quick is not None else self._whole(history, cursor, committed, encode)

    def _quick(
        self, history: list[dict], cursor: int, touched: set[int], committed: set[int] | None, encode: Encode
    ) -> Plan | None:
        """The same history with messages appended (and some touched): None when it is not that."""
        if not self.order and self.kept:
            return None
        order, flags = self.order, self.flags
        if not starts_with(history, order):
            now = set(map(id, history))
            gone = [m for m in order if id(m) not in now]
            if any(id(m) in self.kept for m in gone):
                return None  # a written message left the history: encode it whole
            keep = [(m, f) for m, f in zip(order, flags, strict=True) if id(m) in now]
            order, flags = [m for m, _ in keep], [f for _, f in keep]
            if not starts_with(history, order):
                return None
        tail = history[len(order) :]
        if committed is not None:
            cut = next((n for n, m in enumerate(tail) if id(m) not in committed), len(tail))
            if any(id(m) in committed for m in tail[cut:]):
                return None  # a committed message after one still in a turn: rare, encoded whole
            tail = tail[:cut]
        if not tail and order is self.order and self.text is not None and not any(k in self.kept for k in touched):
            return self._unchanged(cursor)
        texts, ups, written = list(self.texts), list(self.ups), list(self.written)
        kept, extras = dict(self.kept), dict(self.extras)
        refs: list[tuple[str, str]] = []
        first_change: int | None = None
        changed_ids = False
        for key in touched:
            old = kept.get(key)
            if old is None:
                continue  # not written (yet): encoded with the tail, or not at all
            up, extra = encode(old.message, refs)
            if up is None:
                return None  # a stored message that no longer stores anything: encoded whole
            if up != old.up:
                text = hj.dumps(up)
                changed_ids = changed_ids or up.get("id") != old.up.get("id")
                first_change = old.index if first_change is None else min(first_change, old.index)
            else:
                up, text = old.up, old.text
            kept[key] = Kept(old.message, up, text, extra, old.index)
            texts[old.index], ups[old.index] = text, up
            if extra:
                extras[old.index] = (signature(up), extra)
            else:
                extras.pop(old.index, None)
        appended_only = first_change is None
        new_order, new_flags = list(order), list(flags)
        for message in tail:
            up, extra = encode(message, refs)
            new_order.append(message)
            if up is None:
                new_flags.append(0)
                continue
            new_flags.append(1)
            index = len(texts)
            text = hj.dumps(up)
            kept[id(message)] = Kept(message, up, text, extra, index)
            texts.append(text)
            ups.append(up)
            written.append(message)
            if extra:
                extras[index] = (signature(up), extra)
            if first_change is None:
                first_change = index
        if changed_ids:
            written_ids = {u["id"] for u in ups if isinstance(u.get("id"), str)}
        else:
            written_ids = self.written_ids | {u["id"] for u in ups[len(self.ups) :] if isinstance(u.get("id"), str)}
        stored_cursor = new_flags[:cursor].count(1)
        conv = self.conv + _conversation_counts(written[len(self.conv) :], self.conv[-1] if self.conv else 0)
        plan = Plan(
            texts,
            ups,
            written,
            kept,
            new_order,
            new_flags,
            extras,
            refs,
            written_ids,
            first_change,
            stored_cursor,
            conv,
            appended_only=appended_only,
        )
        same = first_change is None and len(texts) == len(self.texts) and self.text is not None
        plan.history_text = self.text if same else array_text(texts)  # a call that changed nothing
        plan.hasher = self._hash_after(plan, len(self.texts))
        return plan

    def _unchanged(self, cursor: int) -> Plan:
        """The write of a history with nothing new to store (a tool call that changed no message): what is kept
        stands as it is, nothing copied (a long session's kept lists are thousands of entries)."""
        plan = Plan(
            self.texts,
            self.ups,
            self.written,
            self.kept,
            self.order,
            self.flags,
            self.extras,
            [],
            self.written_ids,
            None,
            self.flags[:cursor].count(1),
            self.conv,
            appended_only=True,
        )
        plan.history_text = self.text or ""
        plan.hasher = self.hasher
        return plan

    def _whole(self, history: list[dict], cursor: int, committed: set[int] | None, encode: Encode) -> Plan:
        """Every message encoded; one equal to the element it had keeps that element's text."""
        texts: list[str] = []
        ups: list[dict] = []
        written: list[dict] = []
        kept: dict[int, Kept] = {}
        order: list[dict] = []
        flags: list[int] = []
        extras: dict[int, tuple[str, dict]] = {}
        refs: list[tuple[str, str]] = []
        first_change: int | None = None
        for message in history:
            if committed is not None and id(message) not in committed:
                continue
            order.append(message)
            up, extra = encode(message, refs)
            if up is None:
                flags.append(0)
                continue
            flags.append(1)
            index = len(texts)
            old = self.kept.get(id(message))
            if old is not None and old.message is message and old.up == up:
                up, text = old.up, old.text  # as stored, in the original's key order and its very characters
                if old.index != index and first_change is None:
                    first_change = index
            else:
                text = hj.dumps(up)
                if first_change is None:
                    first_change = index
            kept[id(message)] = Kept(message, up, text, extra, index)
            texts.append(text)
            ups.append(up)
            written.append(message)
            if extra:
                extras[index] = (signature(up), extra)
        if first_change is None and len(texts) < len(self.texts):
            first_change = len(texts)
        written_ids = {u["id"] for u in ups if isinstance(u.get("id"), str)}
        # the cursor counts stored messages before it: positions of history, committed or not, as before
        positions = {id(message): flag for message, flag in zip(order, flags, strict=True)}
        stored_cursor = sum(positions.get(id(m), 0) for m in history[:cursor])
        plan = Plan(
            texts,
            ups,
            written,
            kept,
            order,
            flags,
            extras,
            refs,
            written_ids,
            first_change,
            stored_cursor,
            _conversation_counts(written),
        )
        plan.history_text = array_text(texts)
        return plan

    def _hash_after(self, plan: Plan, before: int) -> Any:
        """The side index's hash of history_text[:-1], carried on from the last write when only appended."""
        if not plan.appended_only or self.hasher is None:
            return None
        hasher = self.hasher.copy()
        added = plan.texts[before:]
        if added:
            hasher.update((("," if before > 0 else "") + ",".join(added)).encode("utf-8"))
        return hasher

    # -- after the commit -----------------------------------------------------------------------------
    def accept(self, plan: Plan) -> None:
        self.kept, self.order, self.flags = plan.kept, plan.order, plan.flags
        self.texts, self.ups, self.written = plan.texts, plan.ups, plan.written
        self.extras, self.written_ids = plan.extras, plan.written_ids
        self.conv, self.hasher, self.text = plan.conv, plan.hasher, plan.history_text


def array_text(texts: list[str]) -> str:
    """The row's JSON array of these element texts, made in one copy of the whole: a long session's text is
    megabytes of 4-byte characters (one emoji makes the whole string so), and each `+` of the plain
    `"[" + ",".join(texts) + "]"` copies all of it again."""
    if not texts:
        return "[]"
    if len(texts) == 1:
        return "[" + texts[0] + "]"
    return ",".join(["[" + texts[0], *texts[1:-1], texts[-1] + "]"])


def _conversation_counts(messages: list[dict], start: int = 0) -> list[int]:
    """Running count of user and assistant messages (what list-sessions counts), one entry per message."""
    out, count = [], start
    for message in messages:
        count += message.get("role") in ("user", "assistant")
        out.append(count)
    return out


def preview_before(written: list[dict], first: int) -> dict | None:
    """The last user or assistant message before written index `first`, or None."""
    for index in range(first - 1, -1, -1):
        if written[index].get("role") in ("user", "assistant"):
            return written[index]
    return None
