"""Outlines of long files: which sections a file has, where each starts and how far it reaches.

`outline_for(path, text)` is what read, open-file and read-sections use; `section_text` renders one
pinned section from the same outline, so the ids the agent was shown are the ids that render.
Extractors are pluggable (`register_extractor`); the built-ins cover Markdown and XML/HTML.
"""

from __future__ import annotations

from .model import Heading, estimate_tokens, split_lines
from .pipeline import (
    OUTLINE_THRESHOLD,
    Extractor,
    build_outline,
    extractors,
    find_section,
    outline_for,
    register_extractor,
    section_text,
    unregister_extractor,
)

__all__ = [
    "OUTLINE_THRESHOLD",
    "Extractor",
    "Heading",
    "build_outline",
    "estimate_tokens",
    "extractors",
    "find_section",
    "outline_for",
    "register_extractor",
    "section_text",
    "split_lines",
    "unregister_extractor",
]
