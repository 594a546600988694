"""A scratch folder goes with the process that made it, at a normal exit and when the process is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

MAKE = (
    "import sys, time\n"
    "from cireil.runtime.base.scratch import scratch_dir\n"
    "folder = scratch_dir('cireil-test-', sys.argv[1])\n"
    "(folder / 'f').write_text('x')\n"
    "print(folder, flush=True)\n"
    "if sys.argv[2] == 'wait':\n"
    "    time.sleep(60)\n"
)


def gone_within(folder: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while folder.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_a_scratch_folder_goes_with_its_process(tmp_path, how):
    proc = subprocess.Popen(
        [sys.executable, "-c", MAKE, str(tmp_path), "exit" if how == "exit" else "wait"],
        stdout=subprocess.PIPE,
        text=True,
    )
    folder = Path(proc.stdout.readline().strip())
    assert folder.parent == tmp_path
    if how == "sigkill":
        assert (folder / "f").exists()
        os.kill(proc.pid, signal.SIGKILL)  # no atexit runs: only the guard can remove it
    proc.wait(10)
    assert gone_within(folder, 5)
