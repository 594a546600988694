"""Dry-run previews waiting to be applied: a small bounded store, one per agent."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

MAX_PREVIEWS = 100


@dataclass(frozen=True)
class Preview:
    sandbox_path: str
    host_path: str
    original: bytes  # the complete file at preview time, frontmatter included: apply checks against it
    new_content: bytes
    result: dict[str, Any]  # diff, edits, firstChangedLine, patch, blocks (shared by preview and apply)
    created_at: float = field(default_factory=time.time)


class PreviewStore:
    def __init__(self, limit: int = MAX_PREVIEWS) -> None:
        self.limit = limit
        self._items: OrderedDict[str, Preview] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def add(self, preview: Preview) -> str:
        import uuid  # on the first preview: uuid costs milliseconds to import at agent load

        apply_id = str(uuid.uuid4())
        self._items[apply_id] = preview
        while len(self._items) > self.limit:
            self._items.popitem(last=False)  # the oldest preview goes first
        return apply_id

    def get(self, apply_id: str) -> Preview | None:
        return self._items.get(apply_id)


STATE_KEY = "edit.previews"


def store_for(state: dict[str, Any]) -> PreviewStore:
    """The store kept in a tool-state dict (the Agent's, so previews live as long as the agent)."""
    store = state.get(STATE_KEY)
    if not isinstance(store, PreviewStore):
        store = state[STATE_KEY] = PreviewStore()
    return store
