"""The extension in an in-process IPython shell: run a cell and capture what it shows, load an agent, expect a
UsageError (shared by the magic, command, grant, job and model tests)."""

from __future__ import annotations

from pathlib import Path

from IPython.core.error import UsageError
from IPython.utils.capture import capture_output


class Ran:
    def __init__(self, result, captured) -> None:
        self.result = result
        self.value = result.result
        self.error = result.error_in_exec or result.error_before_exec
        self.stdout = captured.stdout
        self.stderr = captured.stderr
        self.outputs = captured.outputs

    @property
    def displayed(self) -> list[dict]:
        return [o.data for o in self.outputs]

    @property
    def text(self) -> str:
        return "\n".join([self.stdout, self.stderr, *(d.get("text/plain", "") for d in self.displayed)])


def run(shell, code: str, *, ok: bool = True) -> Ran:
    with capture_output() as captured:
        result = shell.run_cell(code)
    ran = Ran(result, captured)
    if ok:
        assert ran.error is None, f"{ran.error!r}\n{ran.stderr}"
    return ran


def usage_error(shell, code: str) -> str:
    """Run a cell that must fail with a plain UsageError shown as one line; return the message."""
    ran = run(shell, code, ok=False)
    assert type(ran.error) is UsageError, repr(ran.error)
    assert "Traceback" not in ran.stderr
    assert ran.stderr.startswith("UsageError: ")
    return str(ran.error)


def loaded(shell, agent: Path, extra: str = "") -> Ran:
    run(shell, "%load_ext cireil")
    return run(shell, f"%cireil load {agent}{extra}")
