"""Plugins: packages (entry point group `cireil.plugins`) or local folders adding tools and outline extractors."""

from .model import Plugin

__all__ = ["Plugin"]
