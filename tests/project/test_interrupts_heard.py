"""The interrupt tests hold when the suite itself was started with SIGINT ignored.

A background job of a non-interactive shell (`./dev test &` in a script, some CI runners) inherits SIGINT
ignored; Python then installs no KeyboardInterrupt handler, and a child it starts inherits the ignore. Before
conftest.py listened again, one interrupt test hung until pytest's timeout (interrupt_main() did nothing) and
one saw `cireil eval` exit 0 instead of 130 (its child ran every run to the end). Issue 34, item 3.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from conftest import REPO

INTERRUPT_TESTS = [
    "tests/runtime/test_agent.py::test_keyboard_interrupt_cancels_the_call_and_waits_for_cleanup",
    "tests/runtime/evals/test_evals_cli.py::test_ctrl_c_stops_the_runs_and_writes_what_finished",
]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_interrupt_tests_pass_in_a_suite_started_with_sigint_ignored(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-o",
            "timeout=90",  # a lost interrupt shows as this timeout, not as the suite's 300 s
            f"--basetemp={tmp_path / 'inner'}",
            *INTERRUPT_TESTS,
        ],
        cwd=REPO,
        preexec_fn=_ignore_sigint,  # as a shell starts a background job: the ignore survives exec
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout
