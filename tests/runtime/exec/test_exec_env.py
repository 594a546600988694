"""The workspace .env: parsing rules (reference §4.12) and what reaches the sandbox."""

from __future__ import annotations

import pytest

import cireil
from cireil.runtime.exec.envfile import EnvFileError, parse_env_text
from exec_agent import exec_agent


def test_parsing_rules_are_the_references():
    text = '# comment\n\nA = 1 \nno equals sign\n=empty key\nexport X="q"\nB=${A}-$A-${NOPE:-d $A}\nA=2\n'
    assert parse_env_text(text, {}) == {"A": "2", "export X": '"q"', "B": "2-2-d $A"}


def test_host_values_are_read_after_earlier_keys_and_self_reference_reads_the_host():
    assert parse_env_text("PATH=$PATH:/x\nY=$PATH", {"PATH": "/bin"}) == {"PATH": "/bin:/x", "Y": "/bin:/x"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A=1\nB=$MISSING", "Line 2: Undefined variable 'MISSING'"),
        ("A=${ALSO_MISSING}", "Line 1: Undefined variable 'ALSO_MISSING'"),
        ("A=${X:-$A}\nB=$A", "Line 2: Circular reference to 'A'"),
    ],
)
def test_undefined_and_circular_references_are_errors_naming_the_line(text, message):
    with pytest.raises(EnvFileError) as info:
        parse_env_text(text, {})
    assert str(info.value) == message


def test_env_vars_reach_the_sandbox_and_later_setenv_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("CIREIL_PASSED", "from-host")
    monkeypatch.setenv("CIREIL_NOT_PASSED", "hidden")
    agent = cireil.load(exec_agent(tmp_path, exec_table='hostEnvPassthrough = ["CIREIL_PASSED", "CIREIL_ABSENT"]\n'))
    (agent.directory / "workspace" / ".env").write_text("TOKEN=abc\nLANG=en_US.UTF-8\nCOPY=${CIREIL_PASSED}!\n")
    out = agent.call("exec", command="env").data["stdout"].splitlines()
    assert "TOKEN=abc" in out and "LANG=en_US.UTF-8" in out and "CIREIL_PASSED=from-host" in out
    assert "COPY=from-host!" in out
    assert not any(line.startswith(("CIREIL_NOT_PASSED", "CIREIL_ABSENT")) for line in out)


def test_an_env_error_is_a_tool_error_with_a_hint_and_nothing_runs(tmp_path):
    agent = cireil.load(exec_agent(tmp_path))
    (agent.directory / "workspace" / ".env").write_text("A=$CIREIL_SURELY_UNDEFINED_VAR\n")
    data = agent.call("exec", command="sh", args=["-c", "touch /workspace/ran"]).data
    assert data["error"] == "Line 1: Undefined variable 'CIREIL_SURELY_UNDEFINED_VAR'"
    assert data["hint"].startswith("Edit the .env file at ") and data["hint"].endswith("to fix the variable reference.")
    assert str(agent.directory) not in data["hint"]  # host paths are scrubbed
    assert not (agent.directory / "workspace" / "ran").exists()


def test_a_fifo_or_a_symlink_planted_as_env_cannot_hang_or_leak(tmp_path):
    import time

    agent = cireil.load(exec_agent(tmp_path))
    assert agent.call("exec", command="sh", args=["-c", "mkfifo /workspace/.env"]).success
    started = time.monotonic()
    data = agent.call("exec", command="true").data
    assert time.monotonic() - started < 2
    assert data["error"] == "The .env file is not a regular file" and "Edit the .env file" in data["hint"]
    (agent.directory / "workspace" / ".env").unlink()
    secret = tmp_path / "host-secret.env"
    secret.write_text("LEAK=yes\n")
    (agent.directory / "workspace" / ".env").symlink_to(secret)
    data = agent.call("exec", command="env").data
    assert "LEAK" not in data.get("stdout", "") and data["success"] is False
