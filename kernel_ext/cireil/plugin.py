"""Public home of what plugins use: `from cireil.plugin import Plugin, Extractor, Heading, settings, state`."""

from .runtime.outline import Extractor, Heading
from .runtime.plugins import Plugin
from .runtime.plugins.services import PluginState, PluginStateError, settings, state

__all__ = ["Extractor", "Heading", "Plugin", "PluginState", "PluginStateError", "settings", "state"]
