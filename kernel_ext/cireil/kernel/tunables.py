"""`%config Cireil`: how often live views refresh and how much a view draws inline, as traitlets.

    %config Cireil                              # every tunable, its help and current value
    %config Cireil.refresh_interval = 0.5       # a running call's view updates twice a second
    c.Cireil.plain_limit = 200_000              # the same in ipython_config.py

Each trait stands for module constants that the code reads when it draws (render/ cannot import kernel/,
so the value is written where the view looks). A trait's default is read from those constants, so the
shipped values stay written once, beside the code that uses them; nothing is imported until a value is
asked for or set, which keeps `%load_ext cireil` light.
"""

from __future__ import annotations

import importlib
from typing import Any

from traitlets import Float, Int, default, observe
from traitlets.config import Configurable

# trait -> the "module:CONSTANT"s it sets; the first one holds the shipped default
TARGETS: dict[str, tuple[str, ...]] = {
    "refresh_interval": ("cireil.kernel.views.live:INTERVAL_S",),
    "inline_media_limit": ("cireil.render.media:INLINE_LIMIT", "cireil.render.mcp:INLINE_LIMIT"),
    "chat_image_limit": ("cireil.render.chat:INLINE_IMAGE_LIMIT",),
    "plain_limit": ("cireil.render.safe:PLAIN_LIMIT",),
    "html_limit": ("cireil.render.safe:HTML_LIMIT",),
    "highlight_limit": ("cireil.render.source:HIGHLIGHT_LIMIT",),
}


# "module:CONSTANT" -> its value before the first %config changed it: unloading the extension puts it back
_SHIPPED: dict[str, Any] = {}


def _module(target: str) -> tuple[Any, str]:
    name, attribute = target.split(":")
    return importlib.import_module(name), attribute


def shipped(trait: str) -> Any:
    target = TARGETS[trait][0]
    module, attribute = _module(target)
    return _SHIPPED.get(target, getattr(module, attribute))


class Cireil(Configurable):
    """cireil's display tunables; `%config Cireil.NAME = VALUE` changes one from the next call on."""

    refresh_interval = Float(
        min=0.01, help="Seconds between updates of a running tool call's live view (at most this often)."
    ).tag(config=True)
    inline_media_limit = Int(
        min=0, help="Bytes of a picture, audio or video result embedded in the notebook; a bigger one is named only."
    ).tag(config=True)
    chat_image_limit = Int(
        min=0, help="Bytes of an attached picture drawn in a chat bubble; a bigger one is listed, not embedded."
    ).tag(config=True)
    plain_limit = Int(min=1, help="Characters of text/plain a view shows; the rest is cut with a note.").tag(
        config=True
    )
    html_limit = Int(min=1, help="Characters of text/html a view may be; a bigger view is replaced by a note.").tag(
        config=True
    )
    highlight_limit = Int(min=0, help="Characters of source text highlighted; longer text is shown plain.").tag(
        config=True
    )

    @default("refresh_interval")
    def _refresh_interval(self) -> float:
        return shipped("refresh_interval")

    @default("inline_media_limit")
    def _inline_media_limit(self) -> int:
        return shipped("inline_media_limit")

    @default("chat_image_limit")
    def _chat_image_limit(self) -> int:
        return shipped("chat_image_limit")

    @default("plain_limit")
    def _plain_limit(self) -> int:
        return shipped("plain_limit")

    @default("html_limit")
    def _html_limit(self) -> int:
        return shipped("html_limit")

    @default("highlight_limit")
    def _highlight_limit(self) -> int:
        return shipped("highlight_limit")

    @observe(*TARGETS)
    def _apply(self, change: dict[str, Any]) -> None:
        for target in TARGETS[change["name"]]:
            module, attribute = _module(target)
            _SHIPPED.setdefault(target, getattr(module, attribute))
            setattr(module, attribute, change["new"])


def register(shell: Any) -> Cireil:
    """A Cireil configurable for `shell`: `%config` lists it, and ipython_config.py's `c.Cireil` applies."""
    tunables = Cireil(parent=shell)
    shell.configurables.append(tunables)
    return tunables


def unregister(shell: Any, tunables: Cireil) -> None:
    """Take the configurable back and put every changed constant back to its shipped value."""
    if tunables in shell.configurables:
        shell.configurables.remove(tunables)
    for target, value in _SHIPPED.items():
        module, attribute = _module(target)
        setattr(module, attribute, value)
    _SHIPPED.clear()
