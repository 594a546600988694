"""Agent: loading, dry-run, reload between calls, Python-defined tools, async calls and interrupts."""

from __future__ import annotations

import _thread
import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

import cireil
from cireil.params import Integer, Params, String
from cireil.runtime.base.errors import ConfigError, UnknownToolError
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.sessions.state import Session
from cireil.runtime.toolkit.tool import Tool
from conftest import MINIMAL_TOOLS, make_agent


def set_tools(agent_dir: Path, text: str) -> None:
    (agent_dir / "config" / "tools.toml").write_text(text)


def names(agent) -> list[str]:
    return [t.name for t in agent.tools]


class Gate:
    """A Python tool that waits until released, recording what happened to it."""

    def __init__(self, name: str = "slow") -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.events: list[str] = []
        self.seen_enabled: list[str] = []
        self.tool = Tool(name=name, description="waits for the test", params=Params(), run=self._run)

    async def _run(self, args, ctx):
        self.seen_enabled = list(ctx.tools_config.enabled_names)
        self.started.set()
        try:
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            self.events.append("finished")
            return {"success": True, "enabled": list(ctx.tools_config.enabled_names)}
        except asyncio.CancelledError:
            self.events.append("cancelled")
            raise
        finally:
            await asyncio.sleep(0.05)  # cleanup that itself takes a moment (e.g. killing a process group)
            self.events.append("cleanup")


# -- load / dry-run ------------------------------------------------------------------------------


def test_load_enables_tools_in_file_order(agent_dir):
    agent = cireil.load(agent_dir)
    assert names(agent) == ["list-dir", "write", "session-info"]
    assert agent.slug == "testagent"
    assert agent.directory == agent_dir
    assert agent.warnings == []
    assert all(t.origin == "built-in" for t in agent.tools)


def test_load_of_a_missing_or_non_agent_directory(tmp_path):
    with pytest.raises(ConfigError, match="agent directory does not exist"):
        cireil.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"config/tools\.toml: required file is missing"):
        cireil.load(tmp_path / "empty")


def test_dry_run_report(agent_dir):
    report = cireil.dry_run(agent_dir)
    assert report.ok
    data = report.as_dict()
    assert data["ok"] is True and data["errors"] == [] and data["warnings"] == []
    assert [t["name"] for t in data["tools"]] == ["list-dir", "write", "session-info"]
    assert data["tools"][0]["parameters"]["required"] == ["path"]


def test_dry_run_never_raises_and_lists_errors(tmp_path):
    report = cireil.dry_run(tmp_path / "missing")
    assert not report.ok and report.tools == []
    agent = make_agent(tmp_path, "reed = true\n")
    report = cireil.dry_run(agent)
    assert not report.ok
    assert report.as_dict()["errors"][0] == {
        "file": "config/tools.toml",
        "line": 1,
        "key": "reed",
        "message": "unknown tool 'reed' (did you mean 'read'?)",
        "severity": "error",
    }


def test_content_problems_are_warnings_not_errors(agent_dir):
    (agent_dir / "core.md").unlink()
    (agent_dir / "blocks" / "soul.md").write_text("no frontmatter")
    (agent_dir / "skills" / "notes" / "SKILL.md").write_text("---\nname: notes\n---\n")
    report = cireil.dry_run(agent_dir)
    assert report.ok
    assert [str(w) for w in report.warnings] == [
        "core.md: warning: missing: agent turns need the base instructions",
        "blocks/soul.md:1: warning: invalid frontmatter: expected file to start with '+++'",
        "skills/notes/SKILL.md:1: warning: invalid frontmatter, skill omitted: "
        'Invalid key: Expected "description" but received undefined',
    ]
    # load checks core.md and the blocks; skills (YAML) are left to dry-run to keep load fast
    assert [w.file for w in cireil.load(agent_dir).warnings] == ["core.md", "blocks/soul.md"]


def test_unreadable_content_files_are_warnings_too(agent_dir):
    (agent_dir / "blocks" / "soul.md").write_bytes(b'+++\ndescription = "\xff"\n+++\n')
    (agent_dir / "blocks" / "person.md").unlink()
    (agent_dir / "blocks" / "person.md").mkdir()
    (agent_dir / "skills" / "odd" / "SKILL.md").mkdir(parents=True)
    report = cireil.dry_run(agent_dir)
    assert report.ok
    assert [(w.file, w.severity) for w in report.warnings] == [
        ("blocks/soul.md", "warning"),
        ("blocks/person.md", "warning"),
        ("skills/odd/SKILL.md", "warning"),
    ]
    assert cireil.load(agent_dir).call("session-info").success


# -- reload between calls ----------------------------------------------------------------------------


def test_tools_toml_edit_applies_on_the_next_call(agent_dir):
    agent = cireil.load(agent_dir)
    generation = agent.generation
    assert agent.call("session-info").success
    set_tools(agent_dir, "list-dir = true\nwrite = false\n")
    with pytest.raises(UnknownToolError, match=r"not enabled in config/tools\.toml"):
        agent.call("session-info")
    assert agent.generation == generation + 1
    assert names(agent) == ["list-dir"]
    result = agent.call("list-dir", path="/workspace")
    assert result.success


def test_the_change_notice_rides_on_the_next_result(agent_dir):
    agent = cireil.load(agent_dir)
    set_tools(agent_dir, "list-dir = true\n# a comment\n")
    result = agent.call("list-dir", path="/workspace")
    assert result.notices == ["config/tools.toml changed: enabled tools are now list-dir"]
    assert agent.call("list-dir", path="/workspace").notices == []


def test_generation_stays_when_the_tool_set_does_not_change(agent_dir):
    agent = cireil.load(agent_dir)
    set_tools(agent_dir, MINIMAL_TOOLS.replace("exec = false\n", "") + "# a comment\n[exec]\ntimeout = 5000\n")
    result = agent.call("list-dir", path="/workspace")
    assert result.notices == []
    assert agent.generation == 0
    assert agent._snapshot.tools_config.exec.timeout == 5000  # the new settings are in use


def test_same_size_edit_within_one_timestamp_tick_is_noticed(agent_dir):
    # Filesystem timestamps are coarse (a kernel tick): two quick edits of equal size can share
    # mtime, size and inode. The change must still be seen.
    path = agent_dir / "config" / "tools.toml"
    set_tools(agent_dir, "list-dir = true\nwrite = false\n")
    agent = cireil.load(agent_dir)
    assert names(agent) == ["list-dir"]
    before = path.stat()
    with open(path, "r+") as fh:  # same inode, same size
        fh.write("list-dir = false\nwrite = true\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_ino == before.st_ino
    assert names(agent) == ["write"]


def test_a_call_in_progress_keeps_its_tool_set(agent_dir):
    gate = Gate()
    set_tools(agent_dir, "list-dir = true\nslow = true\n")
    agent = cireil.load(agent_dir, tools=[gate.tool])
    running = agent.submit("slow")
    assert gate.started.wait(5)
    set_tools(agent_dir, "list-dir = true\nslow = false\n")
    assert agent.call("list-dir", path="/workspace").success  # a new call sees the new set ...
    assert names(agent) == ["list-dir"]
    gate.release.set()
    result = running.result(5)
    assert result.success  # ... while the running one finished with the set it started with
    assert result["enabled"] == ["list-dir", "slow"]
    with pytest.raises(UnknownToolError):
        agent.call("slow")


def test_broken_edit_fails_calls_until_fixed(agent_dir):
    agent = cireil.load(agent_dir)
    set_tools(agent_dir, "list-dir = true\n\nwrite = maybe\n")
    with pytest.raises(ConfigError) as info:
        agent.call("list-dir", path="/workspace")
    assert str(info.value).startswith("config/tools.toml:3: invalid TOML")
    set_tools(agent_dir, "list-dir = true\nreed = true\n")
    with pytest.raises(ConfigError) as info:
        agent.call("list-dir", path="/workspace")
    assert str(info.value) == "config/tools.toml:2: unknown tool 'reed' (did you mean 'read'?)"
    # Display paths do not raise; they keep showing the last good set.
    assert names(agent) == ["list-dir", "write", "session-info"]
    set_tools(agent_dir, "list-dir = true\n")
    result = agent.call("list-dir", path="/workspace")
    assert result.success
    assert names(agent) == ["list-dir"]


def test_broken_sandbox_edit_fails_calls_until_fixed(agent_dir, tmp_path):
    agent = cireil.load(agent_dir)
    sandbox = agent_dir / "config" / "sandbox.toml"
    sandbox.write_text('backend = "incus"\n')
    with pytest.raises(ConfigError, match=r"config/sandbox.toml:1: backend 'incus' is not supported"):
        agent.call("list-dir", path="/workspace")
    src = tmp_path / "data"
    src.mkdir()
    (src / "x.csv").write_text("1\n")
    sandbox.write_text(f'[[mounts]]\nsource = "{src}"\ntarget = "data"\nmode = "ro"\n')
    assert agent.call("list-dir", path="/workspace/data")["entries"] == [{"name": "x.csv", "type": "file"}]
    assert not agent.call("write", path="/workspace/data/y", content="x").success


def test_changed_mcp_toml_asks_for_a_restart(agent_dir):
    agent = cireil.load(agent_dir)
    (agent_dir / "config" / "mcp.toml").write_text("# nothing yet\n")
    result = agent.call("session-info")
    assert len(result.notices) == 1
    assert result.notices[0].startswith("config/mcp.toml changed")
    assert "%cireil restart" in result.notices[0]
    assert agent.call("session-info").notices == []  # said once


def test_mcp_change_needs_restart_and_does_not_break_tools_reload(agent_dir):
    agent = cireil.load(agent_dir)
    # port 9 on loopback: nothing listens, so discovery at restart fails at once
    (agent_dir / "config" / "mcp.toml").write_text('[servers.docs]\nurl = "http://127.0.0.1:9/mcp"\n')
    set_tools(agent_dir, "list-dir = true\nsession-info = true\n")
    # mcp.toml is read at load/restart only; the tools.toml change still applies at the next call
    result = agent.call("session-info")
    assert result.success
    assert any(n.startswith("config/mcp.toml changed") for n in result.notices)
    assert names(agent) == ["list-dir", "session-info"]
    with pytest.raises(ConfigError, match=r"config/mcp\.toml:1: server 'docs': cannot initialize or list tools"):
        agent.restart()
    assert agent.call("session-info").success  # a failed restart keeps the agent as it was
    (agent_dir / "config" / "mcp.toml").unlink()
    agent.restart()
    assert agent.call("session-info").success


def test_restart_rereads_everything(agent_dir):
    agent = cireil.load(agent_dir)
    set_tools(agent_dir, "write = true\n")
    agent.restart()
    assert agent.generation == 1
    assert [t.name for t in agent._snapshot.tools.values()] == ["write"]


# -- tools defined in Python -------------------------------------------------------------------------


def make_echo(name: str = "echo") -> Tool:
    async def run(args, ctx):
        return {"echo": args["text"], "times": args["times"], "success": True}

    return Tool(
        name=name,
        description="Echo the text.",
        params=Params(text=String(min_length=1), times=Integer(minimum=1, default=1)),
        run=run,
        main_arg="text",
    )


def test_python_tool_must_be_enabled_by_name(agent_dir):
    agent = cireil.load(agent_dir, tools=[make_echo()])
    assert "echo" not in names(agent)
    with pytest.raises(UnknownToolError, match=r"'echo' is not enabled in config/tools\.toml"):
        agent.call("echo", text="hi")
    set_tools(agent_dir, MINIMAL_TOOLS + "echo = true\n")
    result = agent.call("echo", text="hi")
    assert result.data == {"echo": "hi", "times": 1, "success": True}
    assert agent.tool("echo").origin == "python"
    assert agent.call("echo", {"text": "a"}, times=2)["times"] == 2


def test_python_tool_enabled_at_load_and_validated(agent_dir):
    set_tools(agent_dir, "echo = true\n")
    agent = cireil.load(agent_dir, tools=[make_echo()])
    assert names(agent) == ["echo"]
    result = agent.call("echo", text="")
    assert result.data["error"] == "text: Invalid length: Expected >=1 but received 0"
    assert cireil.dry_run(agent_dir, tools=[make_echo()]).ok
    assert not cireil.dry_run(agent_dir).ok  # without the tool, 'echo' is an unknown name


@pytest.mark.parametrize("name", ["read", "write", "list-dir", "exec", "invoke"])
def test_python_tool_may_not_shadow_a_builtin(agent_dir, name):
    with pytest.raises(ValueError, match=f"tool '{name}' has the name of a built-in tool"):
        cireil.load(agent_dir, tools=[make_echo(name)])
    with pytest.raises(ValueError):
        cireil.dry_run(agent_dir, tools=[make_echo(name)])


def test_two_python_tools_with_one_name(agent_dir):
    with pytest.raises(ValueError, match="two tools are named 'echo'"):
        cireil.load(agent_dir, tools=[make_echo(), make_echo()])


def test_python_tools_survive_a_reload(agent_dir):
    set_tools(agent_dir, "echo = true\n")
    agent = cireil.load(agent_dir, tools=[make_echo()])
    set_tools(agent_dir, "echo = true\nlist-dir = true\n")
    assert agent.call("echo", text="x").success
    assert names(agent) == ["echo", "list-dir"]


# -- unknown names ---------------------------------------------------------------------------------


def test_unknown_tool_with_did_you_mean(agent_dir):
    agent = cireil.load(agent_dir)
    with pytest.raises(UnknownToolError) as info:
        agent.call("lst-dir", path="/workspace")
    message = str(info.value)
    assert "tool 'lst-dir' is unknown for agent 'testagent'" in message
    assert "(did you mean 'list-dir'?)" in message
    assert "enabled: list-dir, write, session-info" in message
    with pytest.raises(UnknownToolError, match=r"'read' is not enabled in config/tools\.toml"):
        agent.call("read", path="/workspace/hello.txt")


def test_underscore_spelling_finds_the_tool(agent_dir):
    agent = cireil.load(agent_dir)
    assert agent.call("list_dir", path="/workspace").tool == "list-dir"
    assert agent.call("session_info").success


def test_closed_agent_refuses_calls(agent_dir):
    agent = cireil.load(agent_dir)
    agent.close()
    with pytest.raises(RuntimeError, match="closed"):
        agent.call("session-info")


def test_custom_session(agent_dir):
    agent = cireil.Agent.load(agent_dir, session=Session(id="internal:nightly", platform="internal"))
    assert agent.call("session-info").data == {
        "platform": "internal",
        "session_id": "internal:nightly",
        "success": True,
    }


# -- async calls, cancellation, interrupts ---------------------------------------------------------------


def test_acall_from_another_event_loop(agent_dir):
    agent = cireil.load(agent_dir)

    async def main():
        return await agent.acall("list-dir", path="/workspace")

    result = asyncio.run(main())
    assert result.success
    assert [e["name"] for e in result["entries"]] == ["docs", "hello.txt"]


def test_acall_runs_on_the_runtime_thread(agent_dir):
    threads = []

    async def where(args, ctx):
        threads.append(threading.current_thread().name)
        return {"success": True}

    set_tools(agent_dir, "where = true\n")
    agent = cireil.load(agent_dir, tools=[Tool(name="where", description="d", params=Params(), run=where)])
    asyncio.run(agent.acall("where"))
    agent.call("where")
    assert threads == ["cireil-runtime", "cireil-runtime"]


def test_cancelling_the_awaiting_task_cancels_the_tool(agent_dir):
    gate = Gate()
    set_tools(agent_dir, "slow = true\n")
    agent = cireil.load(agent_dir, tools=[gate.tool])

    async def main():
        task = asyncio.ensure_future(agent.acall("slow"))
        while not gate.started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return list(gate.events)

    events = asyncio.run(main())
    assert events == ["cancelled", "cleanup"]  # the tool saw the cancellation and its cleanup had run


def test_blocking_call_from_inside_the_runtime_loop_is_refused(agent_dir):
    holder = {}

    async def nested(args, ctx):
        inner = await holder["agent"].acall("session-info")  # the async form works inside the loop
        try:
            holder["agent"].call("session-info")
        except RuntimeError as exc:
            return {"inner": inner.data["platform"], "blocking": str(exc), "success": True}
        return {"success": False}

    set_tools(agent_dir, "nested = true\nsession-info = true\n")
    agent = cireil.load(agent_dir, tools=[Tool(name="nested", description="d", params=Params(), run=nested)])
    holder["agent"] = agent
    result = agent.call("nested")
    assert result["inner"] == "remote"
    assert "use the async API" in result["blocking"]


def test_submit_returns_at_once(agent_dir):
    gate = Gate()
    set_tools(agent_dir, "slow = true\n")
    agent = cireil.load(agent_dir, tools=[gate.tool])
    started = time.perf_counter()
    work = agent.submit("slow")
    assert time.perf_counter() - started < 1
    assert not work.done()
    done = threading.Event()
    work.add_done_callback(lambda w: done.set())
    gate.release.set()
    assert done.wait(5)
    assert work.result().success
    assert gate.events == ["finished", "cleanup"]


def test_submitted_work_can_be_cancelled_and_waited_for(agent_dir):
    gate = Gate()
    set_tools(agent_dir, "slow = true\n")
    agent = cireil.load(agent_dir, tools=[gate.tool])
    work = agent.submit("slow")
    assert gate.started.wait(5)
    assert work.cancel_and_wait(5)
    assert gate.events == ["cancelled", "cleanup"]
    with pytest.raises(Exception) as info:
        work.result(1)
    assert type(info.value).__name__ == "CancelledError"


def test_keyboard_interrupt_cancels_the_call_and_waits_for_cleanup(agent_dir):
    gate = Gate()
    set_tools(agent_dir, "slow = true\nsession-info = true\n")
    agent = cireil.load(agent_dir, tools=[gate.tool])

    def interrupt():
        if gate.started.wait(5):
            time.sleep(0.1)  # the main thread is surely waiting by now
            _thread.interrupt_main()

    timer = threading.Thread(target=interrupt, daemon=True)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        agent.call("slow")
    timer.join(5)
    assert gate.events == ["cancelled", "cleanup"]  # cleanup done before the interrupt reached us
    assert agent.call("session-info").success  # and the runtime is still usable


def test_runtime_run_reraises_tool_exceptions_outside_results():
    async def fails():
        raise LookupError("plain coroutine failure")

    with pytest.raises(LookupError, match="plain coroutine failure"):
        RUNTIME.run(fails())
