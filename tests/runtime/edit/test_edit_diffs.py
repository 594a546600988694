"""edit's diff and patch are built from the changed places, yet say exactly what a whole-file difflib said.

The reference below is the implementation they replace (difflib's SequenceMatcher over the whole
file, twice), kept here as the oracle: on ordinary edits the new views must be byte-identical.
"""

from __future__ import annotations

import random
import sysconfig
import threading
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cireil
from cireil.runtime.base.errors import ToolError
from cireil.runtime.edit import Change, apply_edits, diffs
from conftest import make_agent

# -- the reference: whole-file difflib, as the edit tool computed it before -------------------------
CONTEXT = 4


def ref_numbered(old_text: str, new_text: str) -> tuple[str, int | None]:
    old, new = old_text.split("\n"), new_text.split("\n")
    width = len(str(max(len(old), len(new))))
    ops = SequenceMatcher(
        None, [x.rstrip("\r") for x in old], [x.rstrip("\r") for x in new], autojunk=False
    ).get_opcodes()
    out: list[str] = []
    first: int | None = None
    elision = " " + " " * width + " ..."

    def same(i: int) -> str:
        return f" {i + 1:>{width}} {old[i].rstrip(chr(13))}"

    changes = [k for k, op in enumerate(ops) if op[0] != "equal"]
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            run = list(range(i1, i2))
            if not changes:
                continue
            if k < changes[0]:
                if len(run) > CONTEXT:
                    out.append(elision)
                out += [same(i) for i in run[-CONTEXT:]]
            elif k > changes[-1]:
                out += [same(i) for i in run[:CONTEXT]]
                if len(run) > CONTEXT:
                    out.append(elision)
            elif len(run) <= 2 * CONTEXT:
                out += [same(i) for i in run]
            else:
                out += [same(i) for i in run[:CONTEXT]] + [elision] + [same(i) for i in run[-CONTEXT:]]
            continue
        if first is None:
            first = j1 + 1
        out += [f"-{i + 1:>{width}} {old[i].rstrip(chr(13))}" for i in range(i1, i2)]
        out += [f"+{j + 1:>{width}} {new[j].rstrip(chr(13))}" for j in range(j1, j2)]
    return "\n".join(out), first


def _split_lf(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    return out + ([parts[-1]] if parts[-1] else [])


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start)
    return f"{start if length else start - 1 if start else 0},{length}"


def _marked(marker: str, lines: list[str]) -> list[str]:
    return [marker + x if x.endswith("\n") else marker + x + "\n\\ No newline at end of file\n" for x in lines]


def ref_unified(path: str, old_text: str, new_text: str) -> str:
    old, new = _split_lf(old_text), _split_lf(new_text)
    name = path.lstrip("/")
    out = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    for group in SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _marked(" ", old[a1:a2])
                continue
            out += _marked("-", old[a1:a2])
            out += _marked("+", new[b1:b2])
    return "".join(out) if len(out) > 2 else ""


def assert_same_views(old: str, new: str, spans) -> None:
    expected = (ref_numbered(old, new), ref_unified("/w/f.py", old, new))
    change = Change(old, new, spans)
    assert (change.numbered(), change.unified("/w/f.py")) == expected
    if spans:  # the first span's line given by the caller, as the edit tool does
        hinted = Change(old, new, spans, first_line=old.count("\n", 0, min(spans)[0]))
        assert (hinted.numbered(), hinted.unified("/w/f.py")) == expected


# -- generated edits ---------------------------------------------------------------------------------
# Lines as in source code: mostly distinct, with the repeated ones real files are full of.
COMMON = ["", "", "}", "    return x", "\tpass", "# ---", "  ", "x = 1\r"]


@st.composite
def edited_texts(draw, max_lines: int = 120):
    distinct = draw(st.sampled_from([4, 40, 10**6]))  # 4: very repetitive files
    line = st.one_of(st.sampled_from(COMMON), st.integers(0, distinct).map(lambda k: f"v{k} = f({k})"))
    lines = draw(st.lists(line, max_size=max_lines))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), min_size=2, max_size=6)))
    pieces, spans, prev, delta = [], [], 0, 0
    for a, b in zip(cuts[::2], cuts[1::2], strict=False):
        b = min(b, a + draw(st.integers(0, 60)))
        line_start = text.rfind("\n", 0, a) + 1
        if line_start >= prev and draw(st.booleans()):  # a copy of the neighbouring line: the classic ambiguity
            a = b = line_start
            end = text.find("\n", a)
            new = text[a : len(text) if end < 0 else end] + "\n"
        else:
            new = draw(st.one_of(st.sampled_from(["", "\n", "y", "new\n"]), st.lists(line, max_size=5).map("\n".join)))
        pieces += [text[prev:a], new]
        spans.append((a, b, a + delta, a + delta + len(new)))
        delta += len(new) - (b - a)
        prev = b
    return text, "".join([*pieces, text[prev:]]), spans


@settings(max_examples=400, deadline=None)
@given(edited_texts())
def test_views_from_the_changed_places_equal_the_whole_file_diff(case):
    old, new, spans = case
    assert_same_views(old, new, spans)
    if len(spans) == 1:
        assert_same_views(old, new, None)  # found by comparing the texts


@settings(max_examples=60, deadline=None)
@given(edited_texts(max_lines=3000))
def test_big_files_whose_runs_are_cut_still_diff_the_same(case):
    old, new, spans = case
    assert_same_views(old, new, spans)


def _python_sources(count: int) -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if 20_000 < p.stat().st_size < 120_000)
    return [p.read_text(encoding="utf-8") for p in random.Random(3).sample(files, count)]


def test_real_edits_on_python_source_match_the_reference():
    """What the tool does: a block of real source found by the matcher, a line inserted, CRLF too."""
    rng = random.Random(11)
    checked = 0
    for source in _python_sources(12):
        for crlf in (False, True):
            text = source.replace("\n", "\r\n") if crlf else source
            lines = text.splitlines(True)
            for _ in range(15):
                start, size = rng.randrange(len(lines) - 6), rng.randint(1, 5)
                block = "".join(lines[start : start + size])
                if not block.strip():
                    continue
                first = lines[start]
                indent = first[: len(first) - len(first.lstrip(" \t"))]
                replacement = rng.choice(
                    [first + indent + "mark_edited()\n" + block[len(first) :], "", first, block.upper()]
                )
                try:
                    outcome = apply_edits(text, [{"oldText": block, "newText": replacement}], "/f.py")
                except ToolError:
                    continue  # the block occurs more than once
                assert_same_views(text, outcome.new_text, outcome.spans())
                checked += 1
    assert checked > 200


def test_no_diff_of_the_whole_file(monkeypatch):
    """difflib is only ever given the lines around the change, however big the file."""
    sizes: list[int] = []
    real = diffs.SequenceMatcher

    def watched(junk, a, b, autojunk=True):
        sizes.append(max(len(a), len(b)))
        return real(junk, a, b, autojunk=autojunk)

    monkeypatch.setattr(diffs, "SequenceMatcher", watched)
    text = "".join(f"line {k}\n" if k % 3 else "\n" for k in range(200_000))
    pos = text.index("line 100000\n")
    new = text[:pos] + "inserted\n" + text[pos:]
    change = Change(text, new, [(pos, pos, pos, pos + 9)])
    assert change.numbered()[1] == 100_001
    assert "+inserted" in change.unified("/big.txt")
    assert sizes and max(sizes) < 500


def test_identical_texts_have_empty_views():
    assert Change("a\nb\n", "a\nb\n").numbered() == ("", None)
    assert Change("", "").unified("/x") == ""


# -- off the runtime loop ----------------------------------------------------------------------------
def test_a_slow_edit_does_not_hold_up_other_calls(tmp_path, monkeypatch):
    """While one edit is busy (held here on purpose), another call on the same agent completes."""
    import cireil.runtime.edit as edit_package

    agent = cireil.load(make_agent(tmp_path, "list-dir = true\nedit = true\n"))
    (agent.directory / "workspace" / "a.py").write_text("x = 1\n" * 1000 + "y = 2\n")
    entered, release = threading.Event(), threading.Event()
    real = edit_package.apply_edits

    def held(*args, **kwargs):
        entered.set()
        if not release.wait(60):
            raise AssertionError("the edit was never released: the other call did not run meanwhile")
        return real(*args, **kwargs)

    monkeypatch.setattr(edit_package, "apply_edits", held)
    busy = agent.submit("edit", path="/workspace/a.py", edits=[{"oldText": "y = 2", "newText": "y = 3"}])
    try:
        assert entered.wait(30)
        other = agent.submit("list-dir", path="/workspace")
        listing = other.result(30)  # would wait for the edit if it ran on the loop
        assert listing.success and "a.py" in str(listing.data)
        assert not busy.done()
    finally:
        release.set()
    result = busy.result(30)
    assert result.success and result["firstChangedLine"] == 1001
    assert (agent.directory / "workspace" / "a.py").read_text().endswith("x = 1\ny = 3\n")


@pytest.mark.parametrize("dry", [False, True])
def test_two_edits_of_one_file_at_once_both_land(tmp_path, dry):
    """Edits run on worker threads but one file's edits still go one after the other."""
    agent = cireil.load(make_agent(tmp_path, "edit = true\n"))
    path = agent.directory / "workspace" / "a.py"
    path.write_text("".join(f"v{k} = {k}\n" for k in range(2000)))
    calls = [
        agent.submit("edit", path="/workspace/a.py", edits=[{"oldText": f"v{k} = {k}", "newText": f"v{k} = -{k}"}])
        for k in range(0, 2000, 100)
    ]
    assert all(c.result(60).success for c in calls)
    text = path.read_text()
    assert all(f"v{k} = -{k}\n" in text for k in range(0, 2000, 100))
    if dry:  # an apply after them still sees the file as written
        preview = agent.call(
            "edit", path="/workspace/a.py", edits=[{"oldText": "v1 = 1", "newText": "v1 = 0"}], dryRun=True
        )
        assert agent.call("edit", path="/workspace/a.py", apply=preview["applyId"]).success
        assert "v1 = 0\n" in path.read_text()


def test_a_change_over_thousands_of_alike_lines_stays_linear():
    """`all: true` over a file whose changed lines alternate with blank ones: one big window of which
    half the lines are equal; difflib over it would pair every blank line with every other."""
    import time

    text = "".join(f"x{k} = 1\n\n" for k in range(30_000))
    started = time.perf_counter()
    outcome = apply_edits(text, [{"oldText": "= 1", "newText": "= 2", "all": True}], "/f.py")
    change = Change(text, outcome.new_text, outcome.spans())
    diff, first = change.numbered()
    patch = change.unified("/f.py")
    assert time.perf_counter() - started < 20  # minutes with a whole-window difflib
    assert first == 1 and diff.count("= 1") == diff.count("= 2") == 30_000
    assert patch.count("\n+x") == 30_000
    # the patch still turns the old text into the new one
    kept = [line[1:] for line in patch.splitlines(True)[3:] if line[:1] in " +"]
    assert "".join(kept) == outcome.new_text


def test_many_places_at_once_match_the_reference():
    """Over 32 changed places the texts are split whole instead of fetched around each place."""
    rng = random.Random(4)
    lines = [rng.choice(["", "}", "    pass"]) if rng.random() < 0.3 else f"v{k} = {k}" for k in range(3000)]
    text = "\n".join(lines) + "\n"
    for count in (33, 200):
        targets = sorted(rng.sample([k for k, x in enumerate(lines) if x.startswith("v")], count))
        edits = [
            {"oldText": lines[k] + "\n", "newText": rng.choice(["", "w = 0\n", lines[k] + "\n\n"])} for k in targets
        ]
        edits = [e for e in edits if e["oldText"] != e["newText"]]
        outcome = apply_edits(text, edits, "/f.py")
        assert_same_views(text, outcome.new_text, outcome.spans())


def test_an_interrupted_edit_is_whole_before_the_interrupt_is_reported(tmp_path, monkeypatch):
    """Cancelling the call (a kernel interrupt) waits for the worker thread: no write lands afterwards."""
    import cireil.runtime.edit as edit_package

    agent = cireil.load(make_agent(tmp_path, "edit = true\n"))
    path = agent.directory / "workspace" / "a.py"
    path.write_text("x = 1\n")
    entered, release = threading.Event(), threading.Event()
    real = edit_package.apply_edits

    def held(*args, **kwargs):
        entered.set()
        release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(edit_package, "apply_edits", held)
    busy = agent.submit("edit", path="/workspace/a.py", edits=[{"oldText": "x = 1", "newText": "x = 2"}])
    assert entered.wait(30)
    busy.cancel()
    assert not busy.done() and not threading.Event().wait(0.3) and not busy.done()  # still finishing the thread
    release.set()
    assert busy.cancel_and_wait(30)
    assert path.read_text() == "x = 2\n"  # written whole, before the cancellation was reported


@pytest.mark.parametrize(
    "original",
    ["+++\nname = 'x'\n+++\nalpha beta\nalpha gamma\n", "---\nn: é\n---\nalpha β\nalpha γ\n", "alpha\r\nalpha\r\n"],
)
def test_the_new_bytes_are_the_edited_text_encoded(original):
    """ASCII files get the replacements spliced into their bytes; the result is the same as encoding."""
    raw = original.encode("utf-8")
    front = original[: original.index("alpha")]
    body = original[len(front) :]
    outcome = apply_edits(body, [{"oldText": "alpha", "newText": "ω!", "all": True}], "/f.md")
    assert outcome.new_bytes(raw, front, "utf-8", "surrogateescape") == (front + outcome.new_text).encode()
