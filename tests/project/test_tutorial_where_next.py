"""Tutorial 01's "where next" works as written from both places a reader has: JupyterLab's terminal, which
`./dev tutorial` starts in the repository root, and a notebook cell, whose kernel runs in `tutorials-work/`;
and nothing lands in the repository (issue 34, item 1: a relative `my-agent` was two different folders)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

from conftest import REPO
from kernelharness import Kernel

TUTORIAL = REPO / "notebooks" / "01-getting-started.ipynb"


def _where_next() -> str:
    nb = nbformat.read(TUTORIAL, as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Where next"))


def _env(home: Path) -> dict[str, str]:
    # as `./dev tutorial` starts the server: the venv's bin first on PATH, for its terminals and its kernels
    return {**os.environ, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def test_the_where_next_commands_reach_one_folder_from_the_terminal_and_from_a_cell(tmp_path):
    text = _where_next()
    terminal = re.search(r"`(cireil init [^`]+)`", text).group(1)
    cell = re.search(r"`(!cireil init [^`]+)`", text).group(1)
    load = re.search(r"`(%cireil load [^`]+)`", text).group(1)
    target = terminal.removeprefix("cireil init ")
    assert cell == f"!{terminal}" and load == f"%cireil load {target}", text
    assert target.startswith("~/"), f"{target}: a relative path means another folder in the terminal and the notebook"
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "tutorials-work"  # where the notebook's kernel runs
    work.mkdir()
    before = set(os.listdir(REPO))
    env = _env(home)

    # JupyterLab's terminal: a shell in the repository root
    made = subprocess.run(["bash", "-c", terminal], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    agent = home / target.removeprefix("~/")
    assert (agent / "config" / "tools.toml").is_file()

    kernel = Kernel(cwd=work, env={"HOME": env["HOME"], "PATH": env["PATH"]})
    try:
        kernel.run("%load_ext cireil")
        loaded = kernel.run(load)
        assert f"cireil: loaded agent '{agent.name}' from {agent}" in loaded.stdout, loaded.text()
        # the same from a cell: `!cireil init` there, into a second folder so that init does not refuse
        other = target + "-from-a-cell"
        kernel.run(cell.replace(target, other))
        assert f"from {home / other.removeprefix('~/')}" in kernel.run(load.replace(target, other)).stdout
    finally:
        kernel.shutdown()
    assert set(os.listdir(REPO)) == before, "the where-next commands wrote into the repository"
    assert os.listdir(work) == []
