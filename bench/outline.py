"""How long an outline of a Markdown file takes, against markdown-it-py's bare block-level parse of the same text.

    python bench/outline.py [--rounds 15]

The documents are 16, 32, 64, 128 and 256 KiB with a heading every 128 bytes on average (levels
1-4; labels with links, code, emphasis, escapes or plain words) between paragraphs (wrapped and
long lines), lists, a table and fenced code whose `#` lines are not headings. Both measurements
run in this process, interleaved, so the ratio compares like with like on whatever machine runs it.
Target (issue 20): at every size the whole outline (sections, ids, spans, token estimates) costs at
most what markdown-it-py's block-level parse alone costs (`MarkdownIt("commonmark")` with inline
parsing disabled): ratio <= 1.0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from markdown_it import MarkdownIt

from cireil.runtime.outline import build_outline

TARGET_RATIO = 1.0
SIZES_KIB = (16, 32, 64, 128, 256)
LABELS = (
    "Section {i}: [planting](https://example.org/{i}) notes",
    "Section {i}: the `gauge` and *mulch*",
    "Section {i} watering schedule",
    "Section {i}: snake_case\\_names and [ref][r]",
)


def _sections(headings: int, pad: int) -> list[str]:
    filler = ("Compost turns kitchen scraps into soil; keep the bays covered. " * (pad // 60 + 1))[:pad]
    wrapped = "\n".join(filler[k : k + 72] for k in range(0, len(filler), 72))
    parts: list[str] = ["[r]: https://example.org/ref\n\n"]
    for i in range(headings):
        level = 1 + (i % 4)
        parts.append(f"{'#' * level} {LABELS[i % len(LABELS)].format(i=i)}\n\n")
        body = wrapped if i % 3 else filler
        parts.append(f"Water bed {i} in the *morning*; check the `gauge`. {body}\n\n")
        if i % 10 == 0:
            parts.append("```sh\n# not a heading\necho water\n```\n\n")
        if i % 20 == 0:
            parts.append("- mulch\n- weed\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n")
    return parts


def document(size: int = 256 * 1024) -> str:
    """Exactly `size` bytes, a heading per 128 bytes: the padding is sized from an unpadded first pass."""
    headings = size // 128
    bare = len("".join(_sections(headings, 0)))
    text = "".join(_sections(headings, max(0, (size - bare) // headings)))
    return text[:size] + "\n" * (size - len(text))


def median_ms(fn, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="timed runs of each, per size (default 21)")
    args = parser.parse_args()
    md = MarkdownIt("commonmark")
    md.disable("inline")
    print(f"outline vs markdown-it-py block-level parse, median of {args.rounds} interleaved runs")
    print(f"{'size':>8} {'sections':>8} {'block parse':>12} {'outline':>9} {'ratio':>6}")
    worst = 0.0
    for kib in SIZES_KIB:
        text = document(kib * 1024)
        outline = build_outline("/workspace/big.md", text)  # also warms up both parsers
        md.parse(text)
        assert outline is not None
        bare, ours = [], []
        for _ in range(args.rounds):  # interleaved: a slow moment hits both alike
            bare += median_ms(lambda: md.parse(text), 1)  # noqa: B023
            ours += median_ms(lambda: build_outline("/workspace/big.md", text), 1)  # noqa: B023
        bare_ms, ours_ms = statistics.median(bare), statistics.median(ours)
        ratio = ours_ms / bare_ms
        worst = max(worst, ratio)
        print(f"{kib:>5} KiB {len(outline['sections']):>8} {bare_ms:>9.1f} ms {ours_ms:>6.1f} ms {ratio:>6.2f}")
    ok = worst <= TARGET_RATIO
    print(f"worst ratio: {worst:.2f}x (target <= {TARGET_RATIO}x at every size): {'ok' if ok else 'OVER TARGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
