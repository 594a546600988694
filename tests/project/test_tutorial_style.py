"""What a tutorial cell shows besides what it is about (issue 34: tutorial 07 showed a stray number and odd escapes).

Static checks of every tutorial's code cells, no kernel needed: a cell does not end in a bare call whose return
value is only a byte or character count (`path.write_text(...)` shows `Out[3]: 69`), and a file's text written
from a triple-quoted string reads as the file will, without backslash-escaped quotes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from conftest import REPO

TUTORIALS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))
# methods whose result is a count nobody asked to see
COUNTING = {"write_text", "write_bytes", "write", "writelines"}


def code_cells(path: Path) -> list[tuple[int, str]]:
    """(number among the code cells, source as IPython runs it: magics become calls, so `ast` reads it)."""
    nb = nbformat.read(path, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    return [(number, TransformerManager().transform_cell(source)) for number, source in enumerate(cells, 1)]


def stray_count(source: str) -> bool:
    """True when the cell's last statement is a bare `x.write_text(...)`-like call: its count becomes Out[]."""
    tree = ast.parse(source)
    if not tree.body or source.rstrip().endswith(";"):
        return False
    last = tree.body[-1]
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Attribute)
        and last.value.func.attr in COUNTING
    )


def escaped_quotes(source: str) -> list[str]:
    """Triple-quoted strings holding `\\"`: a file's text shown with escapes it does not have. (Read from the
    syntax tree, not the tokens: Python 3.12 splits an f-string into several tokens.)"""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            text = ast.get_source_segment(source, node) or ""
            if text.lstrip("rbfuRBFU")[:3] in ('"""', "'''") and '\\"' in text and text not in found:
                found.append(text)
    return [text.splitlines()[0] for text in found]


def test_the_checks_catch_what_tutorial_07_did() -> None:
    before = '(d / "config" / "conditions.toml").write_text("""\n[x]\naction = \\"load\\"\n""")'
    assert stray_count(before) and escaped_quotes(before)
    after = 'p.write_text("""\n[x]\naction = "load"\n""")\nprint("written")'
    assert not stray_count(after) and not escaped_quotes(after)
    assert not stray_count("p.write_text('x');")  # a trailing semicolon shows nothing
    assert not stray_count("n = p.write_text('x')")


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_no_cell_shows_a_stray_count_or_escaped_quotes(path: Path) -> None:
    problems = []
    for number, source in code_cells(path):
        if stray_count(source):
            problems.append(f"code cell {number} ends in a write whose count is shown as its output")
        problems += [f"code cell {number}: escaped quotes in {first!r}" for first in escaped_quotes(source)]
    assert problems == [], f"{path.name}: fix its notebooks/make_*.py and rebuild: {problems}"
