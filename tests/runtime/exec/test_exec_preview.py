"""The bounded line window and previews, against a naive reference built from the whole text."""

from __future__ import annotations

import random

import pytest

from cireil.runtime.exec.lines import LineWindow
from cireil.runtime.exec.preview import excerpt


def naive(text: bytes, head: int, tail: int, max_chars: int, ref: str | None) -> tuple[str, bool]:
    """The reference's algorithm on the whole text (split on \\n), with the seed's fixes applied."""
    parts = text.decode("utf-8", "replace").split("\n") if text else []

    def cut(line: str) -> tuple[str, bool]:
        if len(line) <= max_chars:
            return line, False
        return f"{line[:max_chars]}… [+{len(line) - max_chars} chars]", True

    if len(parts) <= head + tail:
        shown = [cut(p) for p in parts]
        return "\n".join(s for s, _ in shown), any(c for _, c in shown)
    first = [cut(p) for p in parts[:head]]
    last = [cut(p) for p in parts[len(parts) - tail :]] if tail else []
    omitted = parts[head : len(parts) - tail]
    omitted_bytes = len("\n".join(omitted).encode()) + (1 if tail else 0)  # the newline before the tail
    where = f" — see {ref}" if ref else " omitted"
    marker = f"... [truncated, {len(omitted)} lines ({omitted_bytes} bytes){where}] ..."
    text_out = "\n".join(s for s, _ in first) + "\n" + marker + "\n" + "\n".join(s for s, _ in last)
    return text_out, True


def windowed(text: bytes, head: int, tail: int, max_chars: int, chunk: int, ref: str | None = None):
    window = LineWindow(head, tail, max_chars * 4 + 4)
    for i in range(0, len(text), chunk):
        window.feed(text[i : i + chunk])
    part = excerpt(window, max_chars, ref)
    return part.text, part.truncated


@pytest.mark.parametrize("seed", range(40))
def test_window_matches_the_whole_text_algorithm_at_any_chunking(seed):
    rng = random.Random(seed)
    lines = [
        "".join(rng.choice("ab é\t") for _ in range(rng.choice([0, 1, 3, 12, 40]))) for _ in range(rng.randint(0, 60))
    ]
    text = "\n".join(lines).encode() + (b"\n" if rng.random() < 0.5 else b"")
    head, tail = rng.randint(0, 6), rng.randint(0, 6)
    max_chars = rng.choice([5, 10, 100])
    for chunk in (1, 3, 17, 4096):
        assert windowed(text, head, tail, max_chars, chunk, "stdoutPath") == naive(
            text, head, tail, max_chars, "stdoutPath"
        ), (head, tail, max_chars, chunk)


def test_reference_marker_and_previewtail_zero_means_no_tail():
    text = b"".join(b"line %d\n" % i for i in range(100))
    out, truncated = windowed(text, 2, 0, 1000, 64, "stdoutPath")
    assert truncated
    assert out == "line 0\nline 1\n... [truncated, 99 lines (" + str(len(text) - 14) + " bytes) — see stdoutPath] ...\n"


def test_a_single_huge_line_is_previewed_with_an_elision_marker():
    out, truncated = windowed(b"x" * 5_000_000, 20, 20, 1000, 65536)
    assert truncated and out == "x" * 1000 + "… [+4999000 chars]"


def test_memory_of_the_window_is_bounded_by_head_tail_and_line_cap():
    window = LineWindow(3, 3, 40)
    for _ in range(200):
        window.feed(b"y" * 10_000 + b"\n" + b"z" * 5000)
    kept = sum(len(line.prefix) for line in [*window.head, *window.tail, window.current])
    assert kept <= 7 * 40
    assert window.size == 200 * 15_001
