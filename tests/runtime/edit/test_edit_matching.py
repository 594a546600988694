"""edit's matcher: tiers, forgiveness limited to whitespace, ambiguity, style-keeping replacement, near, batches."""

from __future__ import annotations

import pytest

from cireil.runtime.base.errors import ToolError
from cireil.runtime.edit import apply_edits
from cireil.runtime.edit.tiers import EXACT, PUNCTUATION, WHITESPACE, find


def edit(body: str, old: str, new: str, **extra) -> str:
    return apply_edits(body, [{"oldText": old, "newText": new, **extra}], "/workspace/f.py").new_text


def refused(body: str, edits: list[dict]) -> str:
    with pytest.raises(ToolError) as info:
        apply_edits(body, edits, "/workspace/f.py")
    return info.value.message


TABS = "class A:\n\tdef f(self):\n\t\tif x:\n\t\t\treturn 1\n\t\treturn 2\n"
SPACES = TABS.replace("\t", "    ")


# -- tiers ---------------------------------------------------------------------------------------


def test_exact_match_wins_and_is_replaced_verbatim():
    assert edit("a = 1\nb = 2\n", "b = 2", "b = 3") == "a = 1\nb = 3\n"
    assert [m.tier for m in find("x  y\nx y\n", "x y")] == [EXACT]


def test_mid_line_fragment_is_replaced_alone():
    assert edit("print(total_count, other)\n", "total_count", "n") == "print(n, other)\n"


def test_whitespace_tier_forgives_indentation_trailing_spaces_and_runs_of_spaces():
    body = "def f():\n    x  =  1   \n    return x\n"
    assert [m.tier for m in find(body, "x = 1\nreturn x")] == [WHITESPACE]
    assert edit(body, "x = 1\nreturn x\n", "x = 2\nreturn x\n") == "def f():\n    x = 2\n    return x\n"


def test_punctuation_tier_only_when_whitespace_tier_finds_nothing():
    body = "call( a,b )\n"
    assert [m.tier for m in find(body, "call(a, b)")] == [PUNCTUATION]
    assert edit(body, "call(a, b)", "call(a, c)") == "call(a, c)\n"


@pytest.mark.parametrize(
    "old",
    [
        "return 3",  # one character changed
        "returnx",  # two words joined
        "RETURN x",  # case changed
        "return x # done",  # words added
        "if x:\n\treturn y",  # a line changed inside a block
    ],
)
def test_content_that_differs_by_more_than_whitespace_never_matches(old):
    body = "def f(x):\n    if x:\n        return x\n    return y\n"
    assert find(body, old) == []
    assert "Could not find edits[0] in the file." in refused(body, [{"oldText": old, "newText": "z"}])


def test_words_kept_apart_are_never_joined_by_the_punctuation_tier():
    assert find("import os\n", "importos") == []
    assert find("a_b = 1\n", "a _b = 1") == []


def test_new_text_already_present_is_said_so():
    body = "x = 2\n"
    message = refused(body, [{"oldText": "x = 1", "newText": "x = 2"}])
    assert "newText is already present (line 1)" in message
    assert "may already have been applied" in message


def test_empty_old_text_is_refused():
    assert refused("a\n", [{"oldText": " \n", "newText": "b"}]) == (
        "edits[0].oldText must not be empty or whitespace-only in /workspace/f.py."
    )


# -- ambiguity -----------------------------------------------------------------------------------


def test_ambiguous_one_line_edit_lists_every_candidate_with_context():
    body = "a\nb\nx = 1\nc\nd\ne\nf\ng\nx = 1\nh\n"
    message = refused(body, [{"oldText": "x = 1", "newText": "x = 2"}])
    assert message.startswith('Found 2 matches for edits[0]. Set "all: true" to replace all')
    assert "  line 3: >>>x = 1<<<" in message
    assert "  line 9: >>>x = 1<<<" in message
    assert "  line 1: a" in message and "  line 6: " not in message
    assert "\n\n  line 7: f" in message  # blocks separated by a blank line


def test_ambiguity_at_a_forgiving_tier_is_an_error_not_a_reason_to_pick_one():
    body = "if a:\n    go()\nif b:\n\tgo()\n"
    assert "Found 2 matches" in refused(body, [{"oldText": "\t\tgo()", "newText": "stop()"}])


def test_all_replaces_every_candidate():
    assert edit("x = 1\ny\nx = 1\n", "x = 1", "x = 2", all=True) == "x = 2\ny\nx = 2\n"


def test_overlapping_hits_of_one_all_edit_are_refused():
    assert refused("aaa\n", [{"oldText": "aa", "newText": "b", "all": True}]) == (
        "edits[0] and edits[0] overlap in /workspace/f.py. Merge them into one edit or target disjoint regions."
    )


# -- style of the replacement --------------------------------------------------------------------


def test_spaces_old_text_on_a_tab_file_writes_tabs():
    old = "        if x:\n            return 1\n"
    new = "        if x:\n            y = 1\n            return y\n"
    out = edit(TABS, old, new)
    assert out == "class A:\n\tdef f(self):\n\t\tif x:\n\t\t\ty = 1\n\t\t\treturn y\n\t\treturn 2\n"


def test_tab_old_text_on_a_space_file_writes_spaces():
    old = "\t\tif x:\n\t\t\treturn 1\n"
    new = "\t\tif x:\n\t\t\tif y:\n\t\t\t\treturn 1\n"
    out = edit(SPACES, old, new)
    assert out == SPACES.replace("            return 1\n", "            if y:\n                return 1\n")


def test_dedented_old_text_is_reindented_to_the_file_depth():
    old = "if x:\n    return 1\n"
    new = "if x:\n    return 10\nelse:\n    return 0\n"
    out = edit(SPACES, old, new)
    assert "        if x:\n            return 10\n        else:\n            return 0\n        return 2\n" in out


def test_untouched_lines_are_kept_byte_for_byte():
    body = "a = 1   \n  b  =  2\nc = 3 \t\n"
    out = edit(body, "a = 1\nb = 2\nc = 3", "a = 1\nb = 5\nc = 3")
    # kept lines inside the span are copied from the file (their odd spacing stays); only b changes
    assert out == "a = 1   \nb = 5\nc = 3 \t\n"


def test_crlf_file_keeps_crlf_with_lf_old_and_new_text():
    body = "one\r\ntwo\r\nthree\r\n"
    assert edit(body, "one\ntwo\n", "one\n2\n") == "one\r\n2\r\nthree\r\n"
    assert edit(body, "two", "2\nlines") == "one\r\n2\r\nlines\r\nthree\r\n"


def test_lf_file_stays_lf_when_old_text_has_crlf():
    assert edit("one\ntwo\n", "one\r\ntwo\r\n", "1\r\n2\r\n") == "1\n2\n"


def test_mid_line_forgiving_match_keeps_the_rest_of_the_line():
    assert edit("x = f(a,  b)  # note\n", "f(a, b)", "g(a)") == "x = g(a)  # note\n"


# -- near ----------------------------------------------------------------------------------------

TWICE = "def one():\n    return None\n" + "\n" * 40 + "def two():\n    return None\n"


def test_near_string_picks_the_candidate_in_its_window():
    out = edit(TWICE, "return None", "return 2", near="def two")
    assert out.endswith("def two():\n    return 2\n") and "def one():\n    return None" in out


def test_near_symbol_with_direction_and_index():
    assert edit(TWICE, "return None", "return 1", near={"symbol": "def", "index": 1, "direction": "after"}).startswith(
        "def one():\n    return 1\n"
    )


def test_near_line_range_and_bare_line():
    assert edit(TWICE, "return None", "return 2", near={"startLine": 40, "endLine": 45}).endswith("return 2\n")
    assert edit(TWICE, "return None", "return 1", near={"line": 1, "radius": 3}).startswith("def one():\n    return 1")


def test_near_list_intersects_windows():
    out = edit(TWICE, "return None", "return 2", near=["def two", {"startLine": 30, "endLine": 45}])
    assert out.endswith("return 2\n")


def test_near_with_two_candidates_in_the_window_is_still_ambiguous():
    body = "def f():\n    x = 1\n    x = 1\n"
    assert "Found 2 matches" in refused(body, [{"oldText": "x = 1", "newText": "y", "near": "def f"}])


def test_near_counts_exact_and_whitespace_candidates_together():
    body = "def f():\n    x = 1\n\tx  = 1\n"
    assert "Found 2 matches" in refused(body, [{"oldText": "x = 1", "newText": "y", "near": "def f"}])


def test_near_errors_are_specific():
    assert refused(TWICE, [{"oldText": "nothing", "newText": "y", "near": "def two"}]).startswith(
        'Found "near" for edits[0] at line 43, but "oldText" was not found within 15 lines of it.'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": "def three"}]).startswith(
        'Could not find "near" anchor for edits[0].'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": {"symbol": "def"}}]).startswith(
        'Symbol "def" for edits[0] is ambiguous (2 matches'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": {"startLine": 1}}]) == (
        '"near" for edits[0]: startLine and endLine must both be specified.'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": {"startLine": 1, "endLine": 999}}]) == (
        '"near" for edits[0]: lines 1-999 are outside the file (45 lines).'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": {"symbol": "def", "index": 3}}]) == (
        'Symbol "def" for edits[0] has 2 occurrence(s); requested index 3 is out of range.'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": ["def one", "def two"]}]) == (
        '"near" anchors for edits[0] have no overlapping window after landmark 2.'
    )
    assert refused(TWICE, [{"oldText": "x", "newText": "y", "near": {"radius": 3}}]).startswith(
        'Invalid "near" anchor for edits[0]'
    )


# -- batches -------------------------------------------------------------------------------------


def test_batch_is_matched_against_the_original():
    # the second edit's oldText only exists in the original, not after the first edit
    out = apply_edits("a\nb\n", [{"oldText": "a", "newText": "b"}, {"oldText": "b\n", "newText": "c\n"}], "/f")
    assert out.new_text == "b\nc\n"


def test_overlapping_edits_are_refused():
    assert refused("abc\n", [{"oldText": "ab", "newText": "x"}, {"oldText": "bc", "newText": "y"}]).startswith(
        "edits[0] and edits[1] overlap in /workspace/f.py."
    )


def test_edit_that_changes_nothing_is_reported():
    assert refused("a\n", [{"oldText": "a", "newText": "a"}]) == (
        "No changes made to /workspace/f.py. The replacements produced identical content."
    )


def test_metadata_counts_lines_in_the_new_body():
    out = apply_edits("a\nb\nc\nd\n", [{"oldText": "a\n", "newText": "1\n2\n"}, {"oldText": "c", "newText": "3"}], "/f")
    assert out.metadata == [
        {"editIndex": 0, "endLine": 2, "newLines": 2, "replacedLines": 1, "startLine": 1},
        {"editIndex": 1, "endLine": 4, "newLines": 1, "replacedLines": 1, "startLine": 4},
    ]


def test_old_text_indented_less_than_the_file_is_reindented_not_spliced_into_the_indentation():
    body = "def main():\n    crops = 1\n    width = 2\n"
    # "  width = 2" occurs verbatim inside "    width = 2"; a verbatim splice would keep two stray spaces
    out = edit(body, "  width = 2\n", "  if not crops:\n      return\n  width = 2\n")
    assert out == "def main():\n    crops = 1\n    if not crops:\n        return\n    width = 2\n"


def test_old_text_starting_with_blank_lines_matches_only_after_line_breaks():
    body = "a = 1\n\n    b = 2\nc = 3  b = 2\n"
    out = edit(body, "\n\nb = 2\n", "\n\nb = 5\n")
    assert out == "a = 1\n\n    b = 5\nc = 3  b = 2\n"
    assert find("x = 1  \r\n\r\n\tb = 2\n", "\n\n  b = 2") != []
    assert find("x = 1 b = 2\n", "\nb = 2") == []


def test_near_symbol_with_line_takes_the_nearest_occurrence_and_refuses_ties():
    rows = [f"row{i}\n" for i in range(1, 31)]
    rows[9], rows[10], rows[19], rows[20] = "key\n", "x = 1\n", "key\n", "x = 1\n"  # keys at lines 10 and 20
    body = "".join(rows)
    out = edit(body, "x = 1", "x = 2", near={"symbol": "key", "line": 19, "direction": "after", "radius": 3})
    assert out.count("x = 1") == 1 and out.index("x = 2") > out.index("x = 1")
    assert refused(body, [{"oldText": "x", "newText": "y", "near": {"symbol": "key", "line": 15}}]) == (
        'Symbol "key" for edits[0] is ambiguous near line 15 (multiple occurrences at the same distance: lines 10, 20).'
    )
    assert refused(body, [{"oldText": "x", "newText": "y", "near": {"symbol": "key", "line": 1, "radius": 2}}]) == (
        'Symbol "key" for edits[0] has no occurrence within 2 lines of line 1.'
    )


def test_file_style_counts_every_indented_line_as_a_multiline_scan_would():
    """file_style finds indentation by searching for line breaks; the same as `^` at every line."""
    import random
    import re

    from cireil.runtime.edit import reindent

    leads = re.compile(r"^([ \t]+)\S", re.MULTILINE)

    def by_lines(text: str) -> tuple[bool, int]:
        found = leads.findall(text)
        tabs = sum(w.startswith("\t") for w in found)
        widths = [len(w) for w in found if w.startswith(" ") and "\t" not in w]
        for unit in (4, 2, 3, 8):
            if widths and sum(w % unit == 0 for w in widths) >= 0.9 * len(widths):
                return tabs > len(widths), unit
        return tabs > len(widths), 4

    rng = random.Random(2)
    pieces = ["", " ", "  ", "\t", "    ", "   ", " \t", "\t ", "x", "\n", "\r\n", "y z", "\u00a0"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert reindent.file_style(text) == by_lines(text), repr(text)


def test_indentation_counts_carried_from_edit_to_edit_equal_a_fresh_count():
    """The counts of the last file are updated where the next text differs; always equal to recounting."""
    import random

    from cireil.runtime.edit import reindent

    rng = random.Random(3)
    pieces = ["", " ", "  ", "\t", "    ", " \t", "x", "\n", "\r\n", "y z", "\u00a0", "\n    ", "\n\t"]
    text = "".join(rng.choice(pieces) for _ in range(200))
    for _ in range(2000):
        if rng.random() < 0.1:  # now and then another file altogether
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 200)))
        else:  # one to three places changed, the counts carried as an edit carries them
            cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 2 * rng.randint(1, 3))))
            pieces_out, spans, prev, delta = [], [], 0, 0
            for a, b in zip(cuts[::2], cuts[1::2], strict=False):
                b = min(b, a + rng.randint(0, 12))
                new = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
                pieces_out += [text[prev:a], new]
                spans.append((a, b, a + delta, a + delta + len(new)))
                delta += len(new) - (b - a)
                prev = b
            edited = "".join([*pieces_out, text[prev:]])
            if rng.random() < 0.5:
                reindent._lead_counts(text)  # counted before the edit, as a re-indented edit does
            reindent.carry_counts(text, edited, spans)
            text = edited
        assert reindent._lead_counts(text) == reindent._counted(text, 0, len(text)), repr(text)
