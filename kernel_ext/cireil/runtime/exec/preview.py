"""Text shown for output that is not returned whole: spill previews and the fallbackInline excerpt."""

from __future__ import annotations

from dataclasses import dataclass

from .lines import Line, LineWindow


def line_text(line: Line, max_chars: int) -> tuple[str, bool]:
    """The line decoded (invalid UTF-8 replaced) and cut at max_chars with a marker; (text, elided)."""
    text = bytes(line.prefix).decode("utf-8", "replace")
    if line.chars <= max_chars and len(text) <= max_chars and line.size == len(line.prefix):
        return text, False
    kept = text[:max_chars]
    dropped = max(line.chars - len(kept), 1)
    return f"{kept}… [+{dropped} chars]", True


@dataclass(frozen=True)
class Excerpt:
    text: str
    omitted_lines: int
    omitted_bytes: int
    elided: bool  # some shown line was cut

    @property
    def truncated(self) -> bool:
        return self.omitted_lines > 0 or self.elided


def excerpt(window: LineWindow, max_chars: int, marker_ref: str | None) -> Excerpt:
    """Head lines, a marker for what lies between, tail lines; `marker_ref` names the key holding the rest."""
    head, tail, omitted, omitted_bytes = window.lines()
    elided = False
    parts: list[str] = []
    for line in head:
        text, cut = line_text(line, max_chars)
        parts.append(text)
        elided |= cut
    if omitted:
        where = f" — see {marker_ref}" if marker_ref else " omitted"
        marker = f"... [truncated, {omitted} lines ({omitted_bytes} bytes){where}] ..."
        # the reference's shape: head + "\n... [marker] ...\n" + tail, also when the tail is empty
        text = "\n".join(parts) + "\n" + marker + "\n"
        tail_parts = []
        for line in tail:
            shown, cut = line_text(line, max_chars)
            tail_parts.append(shown)
            elided |= cut
        return Excerpt(text + "\n".join(tail_parts), omitted, omitted_bytes, elided)
    for line in tail:
        shown, cut = line_text(line, max_chars)
        parts.append(shown)
        elided |= cut
    return Excerpt("\n".join(parts), 0, 0, elided)
