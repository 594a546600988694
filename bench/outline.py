"""How long an outline of a big Markdown file takes, against markdown-it-py's bare parse of the same text.

    python bench/outline.py [--rounds 15]

The document is 256 KiB with 2,000 headings (levels 1-4) between paragraphs, lists, a table and fenced
code whose `#` lines are not headings. Both measurements run in this process, interleaved, so the
ratio compares like with like on whatever machine runs it. Target: the outline costs at most 1.3x the
bare parse (`MarkdownIt("commonmark").parse`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from markdown_it import MarkdownIt

from cireil.runtime.outline import build_outline

TARGET_RATIO = 1.3
SIZE = 256 * 1024
HEADINGS = 2000


def _sections(pad: int) -> list[str]:
    filler = ("Compost turns kitchen scraps into soil; keep the bays covered. " * (pad // 60 + 1))[:pad]
    parts: list[str] = []
    for i in range(HEADINGS):
        level = 1 + (i % 4)
        parts.append(f"{'#' * level} Section {i}: [planting](https://example.org/{i}) notes\n\n")
        parts.append(f"Water bed {i} in the *morning*; check the `gauge`. {filler}\n\n")
        if i % 10 == 0:
            parts.append("```sh\n# not a heading\necho water\n```\n\n")
        if i % 20 == 0:
            parts.append("- mulch\n- weed\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n")
    return parts


def document() -> str:
    """Exactly SIZE bytes: the padding per section is sized from an unpadded first pass."""
    bare = len("".join(_sections(0)))
    text = "".join(_sections((SIZE - bare) // HEADINGS))
    return text + "\n" * (SIZE - len(text))


def median_ms(fn, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed runs of each (default 15)")
    args = parser.parse_args()
    text = document()
    md = MarkdownIt("commonmark")
    outline = build_outline("/workspace/big.md", text)  # also warms up both parsers
    md.parse(text)
    assert outline is not None
    headings = len(outline["sections"])
    bare, ours = [], []
    for _ in range(args.rounds):  # interleaved: a slow moment hits both alike
        bare += median_ms(lambda: md.parse(text), 1)
        ours += median_ms(lambda: build_outline("/workspace/big.md", text), 1)
    bare_ms, ours_ms = statistics.median(bare), statistics.median(ours)
    ratio = ours_ms / bare_ms
    print(f"document: {len(text.encode()):,} bytes, {text.count(chr(10)) + 1:,} lines, {headings:,} sections")
    print(f"markdown-it-py bare parse: median {bare_ms:.1f} ms over {args.rounds} runs")
    print(f"cireil outline:            median {ours_ms:.1f} ms over {args.rounds} runs")
    print(f"ratio: {ratio:.2f}x (target <= {TARGET_RATIO}x): {'ok' if ratio <= TARGET_RATIO else 'OVER TARGET'}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
