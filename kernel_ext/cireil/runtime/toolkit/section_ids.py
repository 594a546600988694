"""What open-file and read-sections say about section ids that the outline does not have."""

from __future__ import annotations

from ..base.errors import ToolError


def available(outline: dict | None) -> str:
    if not outline:
        return "none (the file has no outline)"
    return ", ".join(s["id"] for s in outline["sections"])


def unknown_message(unknown: list[str], outline: dict | None) -> str:
    return f"Unknown section(s): {', '.join(unknown)}. Available sections: {available(outline)}"


def unknown_ids_error(unknown: list[str], outline: dict | None) -> ToolError:
    return ToolError(unknown_message(unknown, outline), hint="Use section ids from the file's outline (read it again).")
