"""Binder, simulated: what repo2docker does with binder/, in a fresh virtual environment, then the tutorials.

repo2docker installs binder/requirements.txt from the repository root, runs binder/postBuild, and serves
the notebooks. Its containers usually forbid the user namespaces bubblewrap needs, so the tutorials are
executed with a bwrap that fails exactly that way: they must still run, saying so (notebook 04 switches
its demo copy to backend = "none" in a visible cell). The environment is made with Python 3.12, as
runtime.txt asks of Binder, when this machine has one (pyenv's or on PATH); else with the running Python.
Takes a minute or two, mostly pip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

NO_NAMESPACES = "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"


def _repo_copy(dest: Path) -> Path:
    """The files a clone would have (tracked and new, not ignored): what repo2docker sees."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _binder_python() -> str:
    """Binder's Python (runtime.txt: python-3.12) when this machine has it, else the one running the tests."""
    candidates = [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"), reverse=True)]
    candidates += filter(None, [shutil.which("python3.12")])  # a pyenv shim may exist yet not run
    for candidate in candidates:
        probe = [candidate, "-c", "import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    return sys.executable


@pytest.mark.timeout(900)
def test_binder_build_then_tutorials_run_without_user_namespaces(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the git checkout to know which files a clone has")
    repo = _repo_copy(tmp_path / "repo")
    assert (repo / "binder" / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"
    assert (repo / "binder" / "runtime.txt").read_text().strip() == "python-3.12"
    assert "bubblewrap" in (repo / "binder" / "apt.txt").read_text().split()

    env_dir = tmp_path / "venv"
    subprocess.run([_binder_python(), "-m", "venv", str(env_dir)], check=True)
    bin_dir = env_dir / "bin"
    fake_bin = tmp_path / "no-namespaces"
    fake_bin.mkdir()
    (fake_bin / "bwrap").write_text(NO_NAMESPACES)
    (fake_bin / "bwrap").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "JUPYTER_PATH")}
    env["PATH"] = os.pathsep.join([str(fake_bin), str(bin_dir), env["PATH"]])

    def run(*argv: str) -> str:
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    print("binder python:", run(str(bin_dir / "python"), "--version").strip())
    run(str(bin_dir / "python"), "-m", "pip", "install", "-q", "-r", "binder/requirements.txt")
    built = run("binder/postBuild")
    assert "demo agent" in built and "exec sandbox: unavailable here" in built

    report = run(str(bin_dir / "python"), "notebooks/run.py")
    assert "0 failed" in report, report

    executed = json.loads((repo / "test-output" / "notebooks" / "04-exec.ipynb").read_text())
    shown = json.dumps([c.get("outputs", []) for c in executed["cells"]])
    assert "no sandbox on this machine" in shown and "No permissions to creating new namespace" in shown
    assert "WITHOUT a sandbox" in shown  # the backend's warning reaches every exec result
