"""Outline rules: Markdown via markdown-it-py (fences, front matter, setext, links, duplicates, line
endings, spans), XML/HTML elements, the size threshold, and the extractor registry."""

from __future__ import annotations

import pytest

from cireil.runtime.outline import (
    Extractor,
    Heading,
    build_outline,
    estimate_tokens,
    extractors,
    register_extractor,
    section_text,
    unregister_extractor,
)

FILLER = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 2 + "\n") * 60  # ~6.8k chars


def outline(text: str, name: str = "doc.md", *, force: bool = True) -> dict | None:
    return build_outline(f"/workspace/{name}", text, force=force)


def ids(text: str, name: str = "doc.md") -> list[str]:
    result = outline(text, name)
    return [s["id"] for s in result["sections"]] if result else []


def by_id(text: str) -> dict[str, dict]:
    return {s["id"]: s for s in outline(text)["sections"]}


def test_threshold_is_over_2000_tokens_by_utf16_units():
    small = "# Title\n" + "x" * (6000 - 8)  # exactly 6000 chars -> 2000 tokens: no outline
    assert estimate_tokens(small) == 2000
    assert build_outline("/workspace/a.md", small) is None
    bigger = small + "x"
    assert build_outline("/workspace/a.md", bigger)["estTokens"] == 2001
    # an astral character is two UTF-16 units, as in the upstream JavaScript runtime
    assert estimate_tokens("😀" * 3) == 2
    assert estimate_tokens("é" * 3) == 1


def test_outline_object_shape():
    text = "# One\n" + FILLER + "## Two\ntext\n"
    result = build_outline("/workspace/doc.md", text)
    assert set(result) == {"estTokens", "lines", "path", "sections"}
    assert result["path"] == "/workspace/doc.md"
    assert result["lines"] == text.count("\n") + 1
    first = result["sections"][0]
    assert set(first) == {"estTokens", "id", "label", "line", "lines", "type"}
    assert (first["id"], first["label"], first["line"], first["type"]) == ("one", "One", 1, "h1")


def test_headings_in_code_fences_are_not_sections():
    text = "# Real\n\n```sh\n# not a heading\n## nor this\n```\n\n~~~\n# tilde fence\n~~~\n\n    # indented code\n"
    assert ids(text) == ["real"]


def test_html_blocks_blockquotes_and_list_items_are_not_sections():
    text = (
        "# Top\n\n<div>\n\n# inside html? no: this is markdown inside\n</div>\n\n"
        "<!--\n# commented\n-->\n\n> # quoted\n\n- # in a list\n1. # numbered\n"
    )
    assert "commented" not in ids(text)
    assert "quoted" not in ids(text)
    assert "in-a-list" not in ids(text)
    assert "numbered" not in ids(text)
    assert ids(text)[0] == "top"


def test_yaml_front_matter_is_not_a_heading():
    text = "---\ntitle: Garden\n# comment: not a heading\n---\n# Real\ntext\n"
    result = outline(text)
    assert [s["id"] for s in result["sections"]] == ["real"]
    assert result["sections"][0]["line"] == 5


def test_yaml_front_matter_does_not_make_a_setext_heading_in_a_setext_file():
    text = "---\ntitle: x\n---\nChapter\n=======\n\nbody\n"
    result = outline(text)
    assert [(s["id"], s["line"]) for s in result["sections"]] == [("chapter", 4)]


def test_toml_front_matter_is_not_a_heading():
    text = '+++\ndescription = "x"\n# toml comment\n+++\n## Body\n'
    assert ids(text) == ["body"]


def test_a_rule_at_the_top_without_a_closer_is_not_front_matter():
    text = "---\n# Heading\n"
    assert ids(text) == ["heading"]


def test_setext_headings_count_when_there_is_no_atx_heading():
    text = "Title\n=====\n\nintro\n\nPart\n----\n\nbody\n"
    result = outline(text)
    assert [(s["id"], s["type"], s["line"]) for s in result["sections"]] == [("title", "h1", 1), ("part", "h2", 6)]
    # the h1 spans its h2 child, to the end of the file
    assert result["sections"][0]["lines"] == result["lines"]


def test_setext_headings_are_ignored_when_there_is_an_atx_heading():
    text = "Title\n=====\n\n# Atx\n\nPart\n----\n"
    assert ids(text) == ["atx"]


def test_ids_come_from_link_labels_never_destinations():
    text = "# [Composting](https://example.org/compost) at the garden\n## See [docs][ref] and ![logo](a.png)\n\n[ref]: https://x.example\n"
    result = outline(text)
    assert [s["id"] for s in result["sections"]] == ["composting-at-the-garden", "see-docs-and-logo"]
    assert result["sections"][0]["label"] == "Composting at the garden"
    assert all("example" not in s["id"] and "http" not in s["label"] for s in result["sections"])


def test_markup_is_dropped_from_labels():
    assert ids("# Use `read` with *care* and __speed__\n") == ["use-read-with-care-and-speed"]


def test_duplicate_headings_get_unique_ids():
    text = "# Watering\n## Watering\n### Watering\n# Echo\n# Echo\n# Echo 1\n"
    assert ids(text) == ["watering", "watering-1", "watering-2", "echo", "echo-1", "echo-1-1"]


def test_empty_and_symbol_only_headings_still_get_a_usable_id():
    assert ids("# !!!\n# ???\n") == ["section", "section-1"]
    assert ids("# Über uns\n") == ["über-uns"]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_numbers_match_an_editor_for_every_line_ending(newline):
    lines = ["# A", "", "text", "", "## B", "more", "", "```", "# fenced", "```", "## C", ""]
    text = newline.join(lines)
    result = outline(text)
    assert [(s["id"], s["line"]) for s in result["sections"]] == [("a", 1), ("b", 5), ("c", 11)]
    assert result["lines"] == len(lines)


def test_unicode_line_separators_do_not_shift_line_numbers():
    text = "# A\nform\x0cfeed and\u2028separator\x85here\n# B\n"
    assert [s["line"] for s in outline(text)["sections"]] == [1, 3]


def test_span_is_heading_plus_children_until_same_or_higher_level():
    text = "# A\na\n## A1\nx\n### A1a\ny\n## A2\nz\n# B\nb\n"
    s = by_id(text)
    assert (s["a"]["line"], s["a"]["lines"]) == (1, 8)
    assert (s["a1"]["line"], s["a1"]["lines"]) == (3, 4)
    assert (s["a1a"]["line"], s["a1a"]["lines"]) == (5, 2)
    assert (s["a2"]["line"], s["a2"]["lines"]) == (7, 2)
    assert (s["b"]["line"], s["b"]["lines"]) == (9, 3)  # to the end, the final empty line included


def test_section_text_renders_the_span_with_children():
    text = "# A\na\n## A1\nx\n### A1a\ny\n\n## A2\nz\n"
    s = by_id(text)
    assert section_text(text, s["a1"]) == "## A1\nx\n### A1a\ny"
    assert section_text(text, s["a2"]) == "## A2\nz"


def test_heading_text_like_attribute_markup_is_not_a_heading():
    assert ids("#Not heading\n    # code\n") == []


def test_no_sections_means_no_outline():
    assert build_outline("/workspace/plain.md", "no headings here\n" * 500) is None
    assert build_outline("/workspace/notes.txt", "# looks like markdown\n" * 500) is None


def test_xml_elements_with_id_or_name():
    text = (
        '<root>\n  <part id="intro">\n    <p>x</p>\n  </part>\n  <field name="q"/>\n'
        '  <!-- <part id="gone"> -->\n  <part title="no id">\n  </part>\n'
        "  <part id='single' name=\"n\">\n  </part>\n</root>\n"
    )
    result = outline(text, "doc.xml")
    got = [(s["id"], s["label"], s["line"], s["lines"], s["type"]) for s in result["sections"]]
    assert got == [
        ("intro", "part#intro", 2, 3, "xml-element"),
        ("q", "field", 5, 1, "xml-element"),
        ("n", "part", 9, 2, "xml-element"),
    ]


def test_html_files_use_the_xml_extractor():
    text = '<html><body>\n<section id="a">\n<h1>A</h1>\n</section>\n<section id="a">\n</section>\n</body></html>\n'
    assert ids(text, "page.html") == ["a", "a-1"]


def test_extractor_globs_are_case_sensitive_like_upstream():
    assert outline("# A\n", "DOC.MD") is None


def test_registered_extractor_runs_first_and_a_failing_one_is_skipped():
    def todo_sections(lines: list[str]) -> list[Heading]:
        return [
            Heading(line[5:].strip(), line[5:].strip().lower().replace(" ", "-"), n, 1, "todo")
            for n, line in enumerate(lines, 1)
            if line.startswith("TODO:")
        ]

    def broken(lines: list[str]) -> list[Heading]:
        raise RuntimeError("plugin bug")

    register_extractor(Extractor("broken", ("*.md",), broken, priority=10))
    register_extractor(Extractor("todo", ("*.md", "TODO"), todo_sections, priority=5))
    try:
        names = [e.name for e in extractors()]
        assert names[:2] == ["broken", "todo"] and names[2:] == ["markdown", "xml"]
        assert ids("# Heading\nTODO: water\n") == ["water"]
        assert ids("TODO: exact name\n", "TODO") == ["exact-name"]
        # an extractor finding nothing gives way to the next
        assert ids("# Heading\n") == ["heading"]
    finally:
        unregister_extractor("broken")
        unregister_extractor("todo")
    assert [e.name for e in extractors()] == ["markdown", "xml"]


def test_equal_priority_goes_after_existing_extractors():
    register_extractor(Extractor("late", ("*.md",), lambda lines: [], priority=0))
    try:
        assert [e.name for e in extractors()] == ["markdown", "xml", "late"]
    finally:
        unregister_extractor("late")


def test_the_demo_handbook_outline():
    from cireil.runtime.scaffold import demo_source

    text = (demo_source() / "workspace" / "garden-handbook.md").read_text()
    result = build_outline("/workspace/garden-handbook.md", text)
    s = {x["id"]: x for x in result["sections"]}
    assert "watering" in s and "watering-1" in s  # spring and summer
    assert "composting-at-the-garden" in s
    assert not any(x["label"].startswith(("tank-logger", "distance", "Readings")) for x in result["sections"])
    assert s["watering-1"]["line"] > s["summer"]["line"]
    assert section_text(text, s["watering"]).startswith("#### Watering")
    assert "### Summer" not in section_text(text, s["spring"])


def test_html_void_and_unclosed_elements():
    text = '<form id="f">\n<input name="q">\n<input name="r">\n</form>\n<li id="a">one\n<li id="b">two\n'
    got = [(s["id"], s["line"], s["lines"]) for s in outline(text, "page.html")["sections"]]
    # void inputs are one line inside the form; unclosed items span by nesting level, to the end
    assert got == [("f", 1, 4), ("q", 2, 1), ("r", 3, 1), ("a", 5, 3), ("b", 6, 2)]
