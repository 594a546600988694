"""For the turn recorder's tests: a workspace file big enough that reads of it get pruned, and pytest run on an
exported test file the way a person runs it (shared by the recorder, recorder-kernel and step-mode tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cireil

BIG = "\n".join(f"line {n}: " + "tomato " * 12 for n in range(120))  # ~2,500 tokens: reads of it get pruned


def run_pytest(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(cireil.__file__).parent.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(path), "-q", "-p", "no:cacheprovider"],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
