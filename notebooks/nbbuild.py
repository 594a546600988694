"""Shared by the notebooks/make_*.py scripts: tutorials are written as Python, built into .ipynb files.

Keeping the source of each tutorial in a script makes it reviewable as text; `write_notebook` gives
every tutorial the same kernelspec and the project's formatting.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def md(source: str) -> nbformat.NotebookNode:
    return new_markdown_cell(source.strip())


def code(source: str, *, fails: bool = False) -> nbformat.NotebookNode:
    """A code cell; `fails=True` marks a cell that is meant to raise (nbclient then goes on)."""
    cell = new_code_cell(source.strip())
    if fails:
        cell.metadata["tags"] = ["raises-exception"]
    return cell


def write_notebook(path: Path, cells: list[nbformat.NotebookNode]) -> None:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, path)
    # ruff formats notebooks too; an unavailable ruff leaves the cells as written
    subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(path)], check=False)
    print(f"wrote {path}")
