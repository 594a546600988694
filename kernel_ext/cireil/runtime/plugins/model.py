"""What a plugin hands to the runtime."""

from __future__ import annotations

from dataclasses import dataclass

from ..outline import Extractor
from ..toolkit.tool import Tool


@dataclass(frozen=True)
class Plugin:
    """A plugin's tools (each enabled in tools.toml by its name, no prefix) and outline extractors.

    A plugin module or entry point provides either a Plugin or a function returning one.
    """

    name: str
    tools: tuple[Tool, ...] = ()
    extractors: tuple[Extractor, ...] = ()
