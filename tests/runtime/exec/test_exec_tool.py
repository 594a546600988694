"""exec through the tool with real bubblewrap: checks, capture, inline/spill/fallback, timeouts, backends."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

import cireil
from cireil.runtime.exec import sandbox
from exec_agent import BINARIES, exec_agent, processes_with


@pytest.fixture
def agent(tmp_path):
    loaded = cireil.load(exec_agent(tmp_path))
    yield loaded
    loaded.close()


def load(tmp_path, **kwargs):
    return cireil.load(exec_agent(tmp_path, **kwargs))


def host_file(agent, sandbox_path: str) -> Path:
    return agent.directory / sandbox_path.removeprefix("/")


# -- checks before running ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["ls -la", "a;b", "a|b", "a&b", "$x", "`x`", "a'b", 'a"b', "a\\b", "a\tb"])
def test_shell_metacharacters_in_command_are_refused(agent, command):
    result = agent.call("exec", command=command)
    assert result.success is False
    assert result["error"] == (
        "command: Command must be a single binary name without spaces or shell metacharacters. "
        "Use 'args' for arguments."
    )


def test_a_binary_outside_the_allowlist_is_refused_with_the_reference_message(agent):
    result = agent.call("exec", command="rm", args=["-rf", "/workspace"])
    assert result.data["error"] == "Command 'rm' is not in sandbox.toml [bwrap] binaries."
    assert "bash" in result.data["hint"]  # bash is allowed here, so the hint suggests it
    assert (agent.directory / "workspace" / "hello.txt").exists()


def test_a_path_to_an_allowed_name_is_not_the_allowed_name(agent):
    result = agent.call("exec", command="/usr/bin/rm")
    assert result.data["error"] == "Command '/usr/bin/rm' is not in sandbox.toml [bwrap] binaries."


def test_args_must_be_a_list_of_non_empty_strings(agent):
    assert agent.call("exec", command="ls", args="-la").success is False
    assert agent.call("exec", command="ls", args=[""]).success is False


def test_args_are_passed_verbatim_without_a_shell(agent):
    result = agent.call("exec", command="printf", args=["%s|", "$HOME", "a b", "*", "`id`", ";"])
    assert result.data["stdout"] == "$HOME|a b|*|`id`|;|"
    assert result.data["exitCode"] == 0 and result.data["inline"] is True


def test_input_goes_to_stdin_and_non_zero_exit_is_a_failure(agent):
    result = agent.call("exec", command="python3", args=["-"], input="import sys\nprint('got it')\nsys.exit(3)\n")
    assert result.data["stdout"] == "got it\n"
    assert result.data["exitCode"] == 3 and result.success is False


def test_inline_result_shape(agent):
    result = agent.call("exec", command="sh", args=["-c", "echo out; echo err >&2"])
    assert result.data == {
        "exitCode": 0,
        "inline": True,
        "stderr": "err\n",
        "stderrLength": 4,
        "stdout": "out\n",
        "stdoutLength": 4,
        "success": True,
        "truncated": False,
    }


# -- spill, previews, binary output ----------------------------------------------------------------------


def test_output_over_the_threshold_spills_to_files_with_previews(agent):
    result = agent.call("exec", command="python3", args=["-c", "for i in range(5000): print('line', i)"])
    data = result.data
    assert data["truncated"] is True and "inline" not in data and "stderrPath" not in data
    assert data["stdoutPath"].startswith("/workspace/.exec-output/") and data["stdoutPath"].endswith("-python3.out")
    saved = host_file(agent, data["stdoutPath"]).read_bytes()
    assert saved == b"".join(b"line %d\n" % i for i in range(5000))
    assert data["stdoutLength"] == len(saved)
    preview = data["stdoutPreview"].split("\n")
    assert preview[:20] == [f"line {i}" for i in range(20)]
    assert preview[20].startswith("... [truncated, 4961 lines (") and preview[20].endswith("— see stdoutPath] ...")
    assert preview[21:] == [f"line {i}" for i in range(4981, 5000)] + [""]


def test_binary_output_is_kept_raw_in_the_spill_file(agent):
    code = "import sys; sys.stdout.buffer.write(bytes(range(256)) * 200)"
    result = agent.call("exec", command="python3", args=["-c", code])
    assert host_file(agent, result.data["stdoutPath"]).read_bytes() == bytes(range(256)) * 200
    assert "\ufffd" in result.data["stdoutPreview"]  # the preview is text, the file is the bytes


def test_non_utf8_inline_output_is_replaced_not_an_error(agent):
    result = agent.call("exec", command="printf", args=["a\\377b"])
    assert result.data["stdout"] == "a\ufffdb" and result.data["stdoutLength"] == 3


def test_a_single_5mb_line_gets_a_preview_with_elision(agent):
    result = agent.call("exec", command="head", args=["-c", "5000000", "/dev/zero"])
    data = result.data
    assert data["stdoutLength"] == 5_000_000
    assert data["stdoutPreview"] == "\0" * 1000 + "… [+4999000 chars]"
    assert host_file(agent, data["stdoutPath"]).stat().st_size == 5_000_000


def test_inline_false_always_writes_files_and_preview_settings_apply(tmp_path):
    agent = load(tmp_path, exec_table="inline = false\npreviewHead = 1\npreviewTail = 0\nmaxPreviewLineLength = 4\n")
    small = agent.call("exec", command="echo", args=["hi"]).data
    assert small["truncated"] is True and host_file(agent, small["stdoutPath"]).read_text() == "hi\n"
    # "hi\n" is two parts, "hi" and "", more than head 1 + tail 0
    assert small["stdoutPreview"] == "hi\n... [truncated, 1 lines (0 bytes) — see stdoutPath] ...\n"
    many = agent.call("exec", command="printf", args=["abcdefgh\\nsecond\\nthird"]).data
    assert many["stdoutPreview"] == "abcd… [+4 chars]\n... [truncated, 2 lines (12 bytes) — see stdoutPath] ...\n"


# -- fallbackInline --------------------------------------------------------------------------------------


def test_output_dir_on_a_read_only_mount_falls_back_inline_bounded(tmp_path):
    source = tmp_path / "shared"
    source.mkdir()
    mounts = f'[[mounts]]\nsource = "{source}"\ntarget = "shared"\nmode = "ro"\n'
    agent = load(
        tmp_path, exec_table='outputDir = "/workspace/shared/out"\npreviewHead = 2\npreviewTail = 1\n', mounts=mounts
    )
    result = agent.call("exec", command="python3", args=["-c", "for i in range(10000): print(i)"])
    data = result.data
    assert data["fallbackInline"] is True and data["truncated"] is True
    assert not any(k.endswith("Path") for k in data)
    assert data["stdout"].split("\n")[:2] == ["0", "1"] and data["stdout"].endswith("\n")
    assert "omitted] ..." in data["stdout"] and "see stdoutPath" not in data["stdout"]
    assert data["stdoutLength"] == sum(len(f"{i}\n") for i in range(10000)) and data["exitCode"] == 0
    assert data["success"] is True
    assert not (source / "out").exists()


def test_fallback_also_when_inline_is_off_and_nothing_was_omitted(tmp_path):
    # an outputDir outside the sandbox is now a load error; one under a regular file cannot be created either
    agent = load(tmp_path, exec_table='inline = false\noutputDir = "/workspace/hello.txt/out"\n')
    data = agent.call("exec", command="echo", args=["short"]).data
    assert data == {
        "exitCode": 0,
        "fallbackInline": True,
        "stderr": "",
        "stderrLength": 0,
        "stdout": "short\n",
        "stdoutLength": 6,
        "success": True,
        "truncated": False,
    }


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only-permission directories")
def test_fallback_when_the_output_dir_is_not_writable(tmp_path):
    agent = load(tmp_path, exec_table="inline = false\n")
    out = agent.directory / "workspace" / ".exec-output"
    out.mkdir()
    out.chmod(0o500)
    assert agent.call("exec", command="echo", args=["x"]).data["fallbackInline"] is True


def test_a_symlink_planted_as_output_dir_cannot_redirect_the_files(tmp_path, agent):
    outside = tmp_path / "outside"
    outside.mkdir()
    (agent.directory / "workspace" / ".exec-output").symlink_to(outside)
    data = agent.call("exec", command="head", args=["-c", "40000", "/dev/zero"]).data
    assert data["fallbackInline"] is True
    assert list(outside.iterdir()) == []


# -- timeouts and background children ---------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Running or stopped; a zombie waiting to be reaped counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_a_background_child_holding_the_pipes_does_not_stall_the_call(tmp_path, backend):
    """Two background children inherit stdout: one stays in the command's process group, one leaves it
    (setsid). The group is killed when the command exits; the escaped child's pipe is drained for a bounded
    time only. Under bwrap the PID namespace ends both as well, so the backend without it ("none") is what
    shows the runner's own mechanisms at work."""
    agent = load(tmp_path, backend=backend, binaries=[*BINARIES, "setsid"])
    # the parent waits until the escaped child has left the group: otherwise the group kill could reach it
    # before it calls setsid, and the bounded drain would not be what ends the call
    script = (
        "sleep 30 & echo $!; setsid sh -c ': > .escaped; exec sleep 30' & echo $!; "
        "while [ ! -e .escaped ]; do sleep 0.05; done; echo hi"
    )
    started = time.monotonic()
    result = agent.call("exec", command="sh", args=["-c", script])
    elapsed = time.monotonic() - started
    in_group, escaped, hi = result["stdout"].split()
    # As root, backend "none" runs the command in a pid namespace of its own too (unshare), so the pids it
    # printed are that namespace's, not the host's: checking or killing them here would hit host processes.
    host_pids = backend == "none" and sandbox._own_pid_namespace(["true"], None) is None
    try:
        assert hi == "hi" and result.success and not result.data.get("timedOut")
        assert elapsed < 10  # a freeze check, generous: the bounded drain is 2 s, the children sleep 30 s
        if host_pids:  # the child in the group died with its parent
            for _ in range(40):
                if not _alive(int(in_group)):
                    break
                time.sleep(0.05)
            assert not _alive(int(in_group)), "the command's process group outlived the call"
    finally:
        if host_pids:
            for pid in (int(in_group), int(escaped)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        agent.close()


def test_a_timeout_is_a_failure_that_keeps_the_partial_output(tmp_path):
    agent = load(tmp_path, exec_table="timeout = 1000\n")
    started = time.monotonic()
    result = agent.call("exec", command="sh", args=["-c", "echo before; echo warn >&2; sleep 30; echo after"])
    assert time.monotonic() - started < 4
    data = result.data
    assert data["timedOut"] is True and data["success"] is False and data["exitCode"] == -1
    assert data["error"] == "Command timed out after 1000ms"
    assert data["stdout"] == "before\n" and data["stderr"] == "warn\n"


def test_a_timeout_covers_writing_input_to_a_command_that_never_reads(tmp_path):
    agent = load(tmp_path, exec_table="timeout = 1000\n")
    started = time.monotonic()
    result = agent.call("exec", command="sleep", args=["30"], input="x" * 5_000_000)
    assert time.monotonic() - started < 4 and result.data["timedOut"] is True


# -- backends --------------------------------------------------------------------------------------------


def test_backend_none_warns_on_every_result_and_keeps_the_env_allowlist(tmp_path, monkeypatch):
    monkeypatch.setenv("CIREIL_TEST_SECRET", "s3cret")
    agent = load(tmp_path, backend="none")
    data = agent.call("exec", command="env").data
    assert 'backend = "none"' in data["warning"] and "WITHOUT a sandbox" in data["warning"]
    assert "CIREIL_TEST_SECRET" not in data["stdout"]
    assert "LANG=C.UTF-8" in data["stdout"]
    assert 'backend = "none"' in agent.call("exec", command="true").data["warning"]
    started = time.monotonic()
    assert agent.call("exec", command="sh", args=["-c", "sleep 30 & echo hi"]).data["stdout"] == "hi\n"
    assert time.monotonic() - started < 3


def test_bwrap_missing_is_a_clear_error_checked_once(tmp_path, agent, monkeypatch):
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-not-installed-here")
    sandbox.reset_probe()
    try:
        data = agent.call("exec", command="true").data
        assert data["error"].startswith("exec cannot run: bubblewrap (bwrap) is not installed.")
        assert "apt-get install bubblewrap" in data["error"] and 'backend = "none"' in data["hint"]
    finally:
        sandbox.reset_probe()


def test_bwrap_that_cannot_create_namespaces_says_why(tmp_path, agent, monkeypatch):
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox, "BWRAP", str(fake))
    sandbox.reset_probe()
    try:
        error = agent.call("exec", command="true").data["error"]
        assert "No permissions to creating new namespace" in error and "user namespaces" in error
        fake.write_text("#!/bin/sh\nexit 0\n")  # cached: the check is not repeated at every call
        assert agent.call("exec", command="true").data["error"] == error
    finally:
        sandbox.reset_probe()


def test_disk_full_while_spilling_falls_back_and_removes_the_partial_file(agent, monkeypatch):
    from cireil.runtime.exec import capture

    written = [0]
    real = capture.write_fd

    def filling(fd, data):
        if written[0] > 100_000:
            raise OSError(28, "No space left on device")
        written[0] += len(data)
        return real(fd, data)

    monkeypatch.setattr(capture, "write_fd", filling)
    data = agent.call("exec", command="python3", args=["-c", "for i in range(100000): print(i)"]).data
    assert data["fallbackInline"] is True and data["truncated"] is True
    assert data["stdoutLength"] == sum(len(f"{i}\n") for i in range(100000))
    assert data["stdout"].startswith("0\n1\n2\n") and data["stdout"].endswith("99998\n99999\n")
    assert list((agent.directory / "workspace" / ".exec-output").iterdir()) == []


def test_inline_threshold_is_inclusive_and_counts_both_streams(tmp_path):
    agent = load(tmp_path, exec_table="inlineThresholdBytes = 10\n")
    at = agent.call("exec", command="sh", args=["-c", "printf 12345; printf 12345 >&2"]).data
    assert at["inline"] is True and at["stdout"] == "12345" and at["stderr"] == "12345"
    over = agent.call("exec", command="sh", args=["-c", "printf 12345; printf 123456 >&2"]).data
    assert over["truncated"] is True and "inline" not in over
    assert host_file(agent, over["stdoutPath"]).read_text() == "12345"
    assert host_file(agent, over["stderrPath"]).read_text() == "123456"
    assert over["stdoutPath"].removesuffix(".out") == over["stderrPath"].removesuffix(".err")


def test_backend_none_bounds_the_drain_when_an_escaped_child_holds_the_pipes(tmp_path):
    agent = load(tmp_path, backend="none", binaries=["sh"])
    marker = "987.9375"
    started = time.monotonic()
    try:
        data = agent.call("exec", command="sh", args=["-c", f"setsid sleep {marker} & echo hi"]).data
        assert time.monotonic() - started < 3.5  # the bounded drain, not the 60 s timeout
        assert data["stdout"] == "hi\n" and data["exitCode"] == 0
    finally:
        for pid in processes_with(marker):  # outside a sandbox, a setsid child escapes the group: clean up
            os.kill(pid, 9)
