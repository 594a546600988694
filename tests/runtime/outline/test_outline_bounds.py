"""Outlines of hostile files: linear time on tags that never close and on repeated headings, bounded
depth with a note, and the XML scanner agreeing with the regular expression it replaced on sane input.

Timing cases assert completion within a generous bound (tens of times the linear expectation), as
the project's rules allow for freeze cases; the old code took seconds to minutes on each.
"""

from __future__ import annotations

import random
import re
import time
from bisect import bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from cireil.render import outline as outline_view
from cireil.runtime.outline import Heading, build_outline, xml
from cireil.runtime.outline.pipeline import MAX_DEPTH
from cireil.runtime.outline.slug import unique_ids


def outline(text: str, name: str) -> dict | None:
    return build_outline(f"/workspace/{name}", text, force=True)


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started


# -- the old extractor, the oracle for ordinary files (its regex backtracks on hostile ones) -------
_ATTR = re.compile(r"\s(id|name)\s*=\s*\"([^\"]*)\"")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*)\s*(/?)>")


def old_extract(lines: list[str]) -> list[Heading]:
    text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), "\n".join(lines))
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    found: list[dict] = []
    stack: list[tuple[str, int | None, int]] = []
    for match in _TAG.finditer(text):
        closing, tag, attrs, self_closing = match.groups()
        line = bisect_right(starts, match.start())
        if closing:
            depth = len(stack) - 1
            while depth >= 0 and stack[depth][0] != tag:
                depth -= 1
            if depth >= 0:
                if stack[depth][1] is not None:
                    found[stack[depth][1]]["end"] = line
                del stack[depth:]
            continue
        void = bool(self_closing) or tag.lower() in xml._VOID
        index = None
        attr = _ATTR.search(attrs)
        if attr is not None:
            level = 1 + (stack[-1][2] if stack else 0)
            label = f"{tag}#{attr.group(2)}" if attr.group(1) == "id" else tag
            index = len(found)
            found.append(
                {"label": label, "slug": attr.group(2), "line": line, "level": level, "end": line if void else None}
            )
        if not void:
            stack.append((tag, index, (stack[-1][2] if stack else 0) + (index is not None)))
    return [Heading(f["label"], f["slug"], f["line"], f["level"], "xml-element", f["end"]) for f in found]


TAGS = ["div", "section", "p", "br", "img", "x:y", "item", "Item"]
VALUES = ["a", "b c", "x>y", "", "q/r", "it's", "<b>"]


@st.composite
def attributes(draw) -> str:
    out = []
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(["id", "name", "class", "title", "ID", "data-id"]))
        value = draw(st.sampled_from(VALUES))
        quote = draw(st.sampled_from(['"', '"', "'", ""]))
        if quote != '"':
            value = re.sub(r"[\s>'\"]", "", value) if quote == "" else value.replace("'", "")
            value = value or "v"
        sep = draw(st.sampled_from(["=", " = ", "="]))
        out.append(
            draw(st.sampled_from([" ", "\n  "]))
            + (key if draw(st.integers(0, 9)) == 0 else f"{key}{sep}{quote}{value}{quote}")
        )
    return "".join(out)


@st.composite
def documents(draw, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            parts.append(draw(st.sampled_from(["a < b", '<!-- <div id="c"> -->', "text\n", "<!-- x\n -->", "&amp;"])))
        elif kind <= 2 or depth >= 4:
            parts.append(f"<{draw(st.sampled_from(TAGS))}{draw(attributes())}{draw(st.sampled_from(['/', ' /', '']))}>")
        else:
            tag = draw(st.sampled_from(TAGS))
            inner = draw(documents(depth + 1))
            close = f"</{tag}>" if draw(st.integers(0, 6)) else ""
            parts.append(f"<{tag}{draw(attributes())}>{draw(st.sampled_from(['', chr(10)]))}{inner}{close}\n")
    return "".join(parts)


@settings(max_examples=150, deadline=None)
@given(documents())
def test_the_tag_scanner_finds_what_the_old_regex_found_on_ordinary_files(document):
    lines = document.split("\n")
    assert xml.extract(lines) == old_extract(lines)


def test_a_tag_that_never_closes_is_linear():
    """The old regex doubled its time with every attribute of a tag without `>` (23: 6.8 s)."""
    attrs = "".join(f' a{i}="{"v" * 200}"' for i in range(60))
    text = "<root>\n" + "<div" + attrs + "\n" + "text\n" * 10 + '<p id="after">x</p>\n</root>\n'
    result, seconds = timed(outline, text, "page.html")
    assert seconds < 2.0
    assert [s["id"] for s in result["sections"]] == ["after"]


def test_many_unclosed_tags_and_attribute_soup_stay_linear():
    cases = {
        "no >": "<a b " * 40_000,
        "= at the end": "<a <a " * 40_000 + "= >",
        "quotes": '<a x="<a x="' * 30_000 + ">",
        "comments never closed": "<!--" * 50_000 + '<p id="x">',
        "closing tags at depth": "<d>" * 5_000 + "</x>" * 20_000,
    }
    for name, text in cases.items():
        _, seconds = timed(xml.extract, text.split("\n"))
        assert seconds < 5.0, name


def test_ten_thousand_equal_headings_get_ids_in_linear_time():
    """The old loop restarted its counter for every repeat: 10,000 equal headings took 8.5 s."""
    text = "# Notes\n\ntext\n\n" * 10_000
    result, seconds = timed(outline, text, "big.md")
    ids = [s["id"] for s in result["sections"]]
    assert ids[:3] == ["notes", "notes-1", "notes-2"] and ids[-1] == "notes-9999" and len(set(ids)) == 10_000
    assert seconds < 20.0  # the markdown parse itself dominates; the ids are a few milliseconds


def test_unique_ids_still_skip_literal_collisions():
    assert unique_ids(["a", "a-1", "a", "a", "", "", "section"]) == [
        "a",
        "a-1",
        "a-2",
        "a-3",
        "section",
        "section-1",
        "section-2",
    ]
    assert unique_ids(["x-1", "x", "x", "x-2", "x"]) == ["x-1", "x", "x-2", "x-2-1", "x-3"]
    slugs = ["a"] * 20_000 + ["a-5"] + ["a"] * 10
    _, seconds = timed(unique_ids, slugs)
    assert seconds < 2.0


def test_deep_xml_is_outlined_to_a_bounded_depth_with_a_note():
    depth = 1_500
    text = "".join(f'<e id="n{i}">\n' for i in range(depth)) + "".join("</e>\n" for _ in range(depth))
    result = outline(text, "deep.xml")
    sections = result["sections"]
    assert len(sections) == MAX_DEPTH and sections[-1]["id"] == f"n{MAX_DEPTH - 1}"
    assert f"{depth - MAX_DEPTH} section(s) nested more than {MAX_DEPTH} levels deep" in result["note"]
    # every view can draw it (the tree and its text used to recurse 1,500 levels)
    assert "note:" in outline_view.text(result) and "levels deep" in outline_view.html(result)
    assert len(outline_view.openable(result)) <= outline_view.ACTION_LIMIT


def test_shallow_files_have_no_note():
    text = '<a id="x">\n<b id="y">\n</b>\n</a>\n'
    assert "note" not in outline(text, "doc.xml")


def test_random_tag_soup_never_raises():
    rng = random.Random(5)
    alphabet = ["<", ">", "/", '"', "'", "=", " ", "\n", "a", "id", "name", "<!--", "-->", "x"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        xml.extract(text.split("\n"))
