"""The fast Markdown outline finds exactly the sections a plain markdown-it parse finds.

The outline takes shortcuts (common blocks without trying every rule, no tokens for top-level
paragraphs, simple heading labels read without the inline parser). The reference below is the
straightforward extractor it replaced: markdown-it's block parse, then `parseInline` for every
heading. Generated documents mix the block structures that hide or make headings with labels full
of inline markup, near-misses of the shortcuts included.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from cireil.runtime.outline import Heading, build_outline, markdown
from cireil.runtime.outline.model import split_lines
from cireil.runtime.outline.slug import to_slug

_BLOCK = MarkdownIt("commonmark").disable("inline")
_INLINE = MarkdownIt("commonmark")


def reference_label(content: str, env: dict) -> str:
    parts: list[str] = []

    def walk(tokens) -> None:
        for token in tokens:
            if token.type in ("text", "code_inline"):
                parts.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif token.children:
                walk(token.children)

    for block in _INLINE.parseInline(content, env):
        walk(block.children or [])
    return "".join(parts).strip()


def reference_extract(lines: list[str]) -> list[Heading]:
    skip = markdown.front_matter_end(lines)
    source = "\n".join([""] * skip + lines[skip:]) if skip else "\n".join(lines)
    env: dict = {}
    tokens = _BLOCK.parse(source, env)
    atx: list[Heading] = []
    setext: list[Heading] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None:
            continue
        label = reference_label(tokens[index + 1].content, env)
        heading = Heading(label, to_slug(label), token.map[0] + 1, int(token.tag[1]), token.tag)
        (atx if token.markup.startswith("#") else setext).append(heading)
    return atx or setext


# Pieces of heading text: words, and every kind of markup, whole and broken.
INLINE = [
    "word",
    "Two words",
    " ",
    "snake_case",
    "_x_",
    "a_",
    "*em*",
    "**strong**",
    "***both***",
    "* not",
    "*a *b*",
    "x*y*",
    "`code`",
    "`` two ``",
    "` sp `",
    "`open",
    "[link](https://e.org/a)",
    "[link](javascript:alert(1))",
    "[l](<a b>)",
    "[l](/p 'title')",
    "[ref][r]",
    "[ref][nope]",
    "[r]",
    "[]",
    "![alt *x*](i.png)",
    "!",
    "&amp;",
    "&nope",
    "Q&A",
    "& ",
    "<b>",
    "< 3",
    "<http://a.b>",
    "\\_",
    "\\a",
    "\\",
    ":",
    ")",
    "(",
    "#",
    "é",
    "\u00a0",
    "\t",
]
BLOCKS = [
    "",
    "text line",
    "another line of text",
    "***",
    "---",
    "===",
    "- item",
    "  - nested",
    "1. one",
    "2) two",
    "> quote",
    ">",
    "    indented",
    "```",
    "~~~",
    "<div>",
    "</div>",
    "<!-- c -->",
    "[r]: https://e.org/r",
    '[q]: /u "title',
    "+++",
    "|a|b|",
    "#",
    "#no space",
    "####### seven",
    "  # indented heading",
    "text\\",
]


@st.composite
def documents(draw) -> str:
    lines: list[str] = []
    setext = draw(st.booleans())  # setext headings count only in files without ATX headings
    for _ in range(draw(st.integers(1, 30))):
        if setext and draw(st.integers(0, 2)) == 0:
            for _ in range(draw(st.integers(1, 2))):
                lines.append("".join(draw(st.lists(st.sampled_from(INLINE), min_size=1, max_size=5))))
            lines.append(draw(st.sampled_from(["===", "---", "  ---  ", "- - -"])))
        elif not setext and draw(st.integers(0, 2)) == 0:
            hashes = "#" * draw(st.integers(1, 6))
            label = "".join(draw(st.lists(st.sampled_from(INLINE), min_size=0, max_size=6)))
            closing = draw(st.sampled_from(["", "", " #", " ##"]))
            lines.append(f"{draw(st.sampled_from(['', ' ', '   ']))}{hashes} {label}{closing}")
        else:
            lines.append(draw(st.sampled_from(BLOCKS)))
    return draw(st.sampled_from(["", "---\ntitle: x\n---\n"])) + "\n".join(lines) + "\n"


@settings(max_examples=500, deadline=None)
@given(documents())
def test_generated_documents_outline_as_the_plain_parse_does(document):
    lines = split_lines(document)
    assert markdown.extract(lines) == reference_extract(lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(INLINE), min_size=1, max_size=8).map("".join))
def test_heading_labels_as_the_inline_parser_reads_them(label):
    env: dict = {}
    _BLOCK.parse("[r]: https://e.org/r\n", env)
    assert markdown._label(label.strip(), env) == reference_label(label.strip(), env)


def test_setext_files_and_nested_blocks_keep_their_rules():
    text = "Title\n=====\n\ntext\nmore text\n---\n\n> # quoted\n\n- # in a list\n\nplain\n"
    got = [(s["label"], s["line"]) for s in build_outline("/w/a.md", text, force=True)["sections"]]
    assert got == [("Title", 1), ("text more text", 4)]
    lines = split_lines(text)
    assert markdown.extract(lines) == reference_extract(lines)
