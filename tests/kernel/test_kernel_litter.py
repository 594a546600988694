"""Nothing of cireil's stays behind a kernel: the `--demo` copy of one that ran `%cireil eval` is removed when
the kernel ends, whether it was let exit (atexit) or killed (a front end's shutdown past its grace, a test
harness): issue 34, item 7."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelharness import Kernel


def _gone(path: Path, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not path.exists()


@pytest.mark.parametrize("how", ["killed", "shut down"])
def test_the_demo_copy_of_a_kernel_that_ran_an_eval_is_removed_when_the_kernel_ends(tmp_path, how):
    kernel = Kernel(cwd=tmp_path)
    scratch = None
    try:
        kernel.run("%load_ext cireil\n%cireil load --demo")
        run = kernel.run("%cireil eval --jobs 2", timeout=180, ok=False)
        assert run.status == "ok", run.text()
        shown = kernel.run("import cireil\nprint(cireil.current_agent().directory.parent)").stdout.strip()
        scratch = Path(shown)
        assert scratch.name.startswith("cireil-demo-") and scratch.is_dir()
    finally:
        if how == "killed":
            kernel.shutdown()  # SIGKILL: no atexit runs in the kernel
        else:
            kernel.kc.stop_channels()
            kernel.km.shutdown_kernel(now=False)  # a shutdown_request, as JupyterLab's "Shut Down Kernel"
    assert scratch is not None and _gone(scratch), f"{scratch} is still there after the kernel was {how}"
