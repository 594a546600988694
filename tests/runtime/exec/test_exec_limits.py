"""No process outlives its call, and capture memory stays bounded whatever the output size."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time

import pytest

import cireil
from exec_agent import exec_agent, processes_with


def test_cancelling_acall_kills_the_whole_group_and_propagates(tmp_path):
    agent = cireil.load(exec_agent(tmp_path))
    marker = "987.125"
    script = f"sleep {marker} & sh -c 'sleep {marker}' & sleep {marker}"

    async def main() -> None:
        task = asyncio.ensure_future(agent.acall("exec", command="sh", args=["-c", script]))
        for _ in range(50):
            await asyncio.sleep(0.05)
            if len(processes_with(marker)) >= 3:
                break
        assert len(processes_with(marker)) >= 3
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 5
    assert processes_with(marker) == []


def test_cancelling_the_submitted_call_of_a_widget_kills_the_group(tmp_path):
    agent = cireil.load(exec_agent(tmp_path))
    marker = "987.375"
    submitted = agent.submit("exec", command="sh", args=["-c", f"sleep {marker} & sleep {marker}"])
    deadline = time.monotonic() + 3
    while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert submitted.cancel_and_wait(5)
    assert processes_with(marker) == []


def test_a_timeout_leaves_no_process_behind(tmp_path):
    agent = cireil.load(exec_agent(tmp_path, exec_table="timeout = 1000\n"))
    marker = "987.625"
    data = agent.call("exec", command="sh", args=["-c", f"sleep {marker} & sleep {marker}"]).data
    assert data["timedOut"] is True
    assert processes_with(marker) == []


MEASURE = textwrap.dedent("""\
    import resource, sys, json
    import cireil
    agent = cireil.load(sys.argv[1])
    agent.call("exec", command="true")  # warm up: threads, imports, the bwrap probe
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data = agent.call("exec", command="sh", args=["-c", sys.argv[2]]).data
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"growth_kib": after - before, "length": data["stdoutLength"], "path": data.get("stdoutPath")}))
""")


@pytest.mark.parametrize(
    "script",
    ["head -c 200000000 /dev/zero | cat", "yes 'a line of text' | head -c 100000000"],
    ids=["one-line", "many-lines"],
)
def test_huge_output_is_captured_with_bounded_memory(tmp_path, script):
    agent = exec_agent(tmp_path, exec_table="maxOutputBytes = 300000000\n")  # all of it on disk, for this test
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(agent), script], capture_output=True, text=True, timeout=60, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    size = 200_000_000 if "zero" in script else 100_000_000
    assert figures["length"] == size
    assert (agent / figures["path"].removeprefix("/")).stat().st_size == size
    assert figures["growth_kib"] < 32 * 1024, figures


def test_cancelling_a_turn_while_exec_runs_cancels_the_turn_not_the_command_only(tmp_path):
    """Spec: cancellation of the calling turn propagates as cancellation rather than a successful command
    result. A command that swallowed it would hand the turn a result and let it go on with another model
    call; here the turn stops where it was and keeps only its complete steps."""
    from cireil.testing.scripted_llm import ScriptedLLM, reply
    from turnkit import engine_toml

    marker = "987.875"
    agent_dir = exec_agent(tmp_path)
    (agent_dir / "config" / "tools.toml").write_text("respond = true\n[exec]\nenabled = true\n")
    with ScriptedLLM() as llm:
        (agent_dir / "config" / "engine.toml").write_text(engine_toml(llm.base_url))
        agent = cireil.load(agent_dir)
        try:
            llm.script(
                reply.tool_calls(("exec", {"command": "sleep", "args": [marker]})),
                reply.tool_calls(("respond", {"content": "the command ended"})),
            )
            submitted = agent.submit_turn("run it")
            deadline = time.monotonic() + 20
            while not processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert processes_with(marker), "the command never started"
            assert submitted.cancel_and_wait(10)
            time.sleep(0.5)  # a turn that went on would ask the model again about now
            assert len(llm.requests) == 1
            assert agent.session.history == []  # nothing of the cancelled turn is kept (as the original)
            assert processes_with(marker) == []
        finally:
            agent.close()
