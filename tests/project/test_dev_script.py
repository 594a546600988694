"""`./dev tutorial` as a person runs it: root or not, extra arguments, the PATH its terminals get, working copies.

The venv is a stand-in whose `jupyter` only reports what it was started with, so no server starts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

FAKE_JUPYTER = """#!/bin/sh
echo "ARGS: $*"
echo "CIREIL: $(command -v cireil)"
for arg in "$@"; do
    case "$arg" in --ServerApp.terminado_settings=*) echo "TERMINAL: ${arg#*=}";; esac
done
"""


def _checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the files `dev` needs, and a ready venv whose jupyter prints its arguments."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / "dev", repo / "dev")
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    for nb in (REPO / "notebooks").glob("[0-9]*.ipynb"):
        shutil.copy(nb, repo / "notebooks" / nb.name)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    for name, text in (("jupyter", FAKE_JUPYTER), ("cireil", "#!/bin/sh\n")):
        (venv / "bin" / name).write_text(text)
        (venv / "bin" / name).chmod(0o755)
    (venv / ".cireil-installed-lab").touch()  # newer than pyproject.toml: setup installs nothing
    return repo, venv


def _run(repo: Path, venv: Path, *args: str) -> str:
    env = {**os.environ, "CIREIL_VENV": str(venv), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", str(repo / "dev"), "tutorial", *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tutorial_passes_arguments_through_and_allows_root(tmp_path: Path):
    repo, venv = _checkout(tmp_path)
    out = _run(repo, venv, "--port", "9999", "--no-browser")
    args = out.split("ARGS: ", 1)[1].splitlines()[0].split()
    assert args[0] == "lab"
    assert args[-3:] == ["--port", "9999", "--no-browser"]
    assert ("--allow-root" in args) == (os.geteuid() == 0)


def test_tutorial_server_finds_the_cireil_command(tmp_path: Path):
    # JupyterLab's terminals inherit the server's PATH; `cireil init` must work there
    repo, venv = _checkout(tmp_path)
    out = _run(repo, venv)
    assert f"CIREIL: {venv / 'bin' / 'cireil'}" in out


def test_tutorial_terminals_keep_that_path_without_a_tty(tmp_path: Path):
    # started without a tty, jupyter would run terminals as login shells, and /etc/profile resets PATH
    repo, venv = _checkout(tmp_path)
    out = _run(repo, venv)  # captured output: no tty, as in a container
    settings = json.loads(out.split("TERMINAL: ", 1)[1].splitlines()[0])
    shell = settings["shell_command"]
    assert "-l" not in shell and Path(shell[0]).exists()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    found = subprocess.run([*shell, "-c", "command -v cireil"], env=env, capture_output=True, text=True)
    assert found.stdout.strip() == str(venv / "bin" / "cireil")


def test_tutorial_opens_working_copies_and_keeps_them(tmp_path: Path):
    repo, venv = _checkout(tmp_path)
    out = _run(repo, venv)
    assert "tutorials-work/01-getting-started.ipynb" in out
    work = repo / "tutorials-work"
    assert sorted(p.name for p in work.glob("*.ipynb")) == sorted(p.name for p in (repo / "notebooks").glob("*.ipynb"))
    mine = work / "01-getting-started.ipynb"
    mine.write_text("my edits")
    _run(repo, venv)
    assert mine.read_text() == "my edits"  # a second start never overwrites a person's working copy
