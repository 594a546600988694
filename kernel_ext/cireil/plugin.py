"""Public home of what plugins use: `from cireil.plugin import Plugin, Extractor, Heading`."""

from .runtime.outline import Extractor, Heading
from .runtime.plugins import Plugin

__all__ = ["Extractor", "Heading", "Plugin"]
