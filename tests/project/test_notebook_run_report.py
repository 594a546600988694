"""`python notebooks/run.py` (`./dev notebooks`) reports one line per notebook and the failures, nothing else
(issue 34: every kernel's "running over TCP without encryption" warning and library chatter filled the run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from conftest import REPO

RUN = REPO / "notebooks" / "run.py"


def notebook(path: Path, *sources: str) -> Path:
    nb = new_notebook(cells=[new_markdown_cell("# a notebook"), *(new_code_cell(s) for s in sources)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def run(tmp_path: Path, *notebooks: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN), "--out", str(tmp_path / "out"), *map(str, notebooks)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_clean_run_is_one_line_per_notebook_and_a_summary(tmp_path: Path) -> None:
    good = notebook(tmp_path / "01-good.ipynb", "x = 1", "import sys\nprint('chatter', file=sys.__stderr__)\nx")
    done = run(tmp_path, good, good)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""  # no kernel warning, no library warning
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    assert lines[0].startswith("ok   01-good.ipynb  (2 code cells, ") and lines[1].startswith("ok   01-good.ipynb")
    assert lines[2] == f"tutorials: 2 passed, 0 failed; executed copies in {tmp_path / 'out'}"
    assert (tmp_path / "out" / "01-good.ipynb").is_file()


def test_a_failure_says_which_cell_what_error_and_what_its_kernel_logged(tmp_path: Path) -> None:
    good = notebook(tmp_path / "01-good.ipynb", "x = 1")
    bad = notebook(
        tmp_path / "02-bad.ipynb",
        "x = 1",
        "import sys\n"
        "print('the kernel said this', file=sys.__stderr__, flush=True)\n"
        "raise ValueError('\\x1b[31mbroken\\x1b[0m')",
        "never = 'run'",
    )
    done = run(tmp_path, good, bad)
    assert done.returncode == 1
    assert done.stderr == ""
    report = done.stdout.splitlines()
    assert report[0].startswith("ok   01-good.ipynb")
    assert report[1].startswith("FAIL 02-bad.ipynb  (")
    assert report[1].endswith("): code cell 2 (import sys): ValueError: broken")  # colour codes removed
    assert report[2:4] == ["  kernel log:", "    the kernel said this"]
    assert "TCP" not in done.stdout  # the warning every kernel prints is not part of a failure's log
    assert report[-1].startswith("tutorials: 1 passed, 1 failed")
