"""The extension in a real kernel, driven through jupyter_client as a notebook front end would."""

from __future__ import annotations

import textwrap
import time

import pytest

from conftest import MINIMAL_TOOLS, make_agent

SLOW_TOOLS = textwrap.dedent("""\
    import asyncio
    import cireil
    from cireil.params import Number, Params

    async def _slow(args, ctx):
        await asyncio.sleep(args["seconds"])
        return {"slept": args["seconds"], "success": True}

    slow_tools = [cireil.Tool("slow", "Sleep for a while.", Params(seconds=Number(default=30)), _slow,
                              main_arg="seconds")]
""")


@pytest.fixture
def slow_agent(tmp_path):
    return make_agent(tmp_path, MINIMAL_TOOLS + "slow = true\n")


def test_tool_magic_result_bundle(kernel, agent_dir):
    run = kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    assert "%cireil_list_dir" in run.stdout
    bundle = kernel.run("%cireil_list_dir /workspace").result
    assert bundle is not None
    assert {"text/plain", "text/html", "application/vnd.cireil.result+json"} <= set(bundle)
    assert "hello.txt" in bundle["text/plain"]
    assert "<table" in bundle["text/html"]
    assert bundle["application/vnd.cireil.result+json"]["success"] is True
    assert {e["name"] for e in bundle["application/vnd.cireil.result+json"]["entries"]} == {"hello.txt", "docs"}


def test_cell_form_writes_the_body(kernel, agent_dir):
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    body = "# Notes\n\n$HOME stays {as is}\n"
    run = kernel.run(f"%%cireil_write /workspace/notes.md\n{body}")
    assert run.result["application/vnd.cireil.result+json"] == {"path": "/workspace/notes.md", "success": True}
    assert (agent_dir / "workspace" / "notes.md").read_text() == body


def test_usage_error_is_one_line(kernel, agent_dir):
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    run = kernel.run("%cireil_list_dir /workspace /tasks", ok=False)
    assert run.status == "error"
    lines = run.text().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("UsageError: two bare arguments")
    assert "Traceback" not in run.text()


def test_interrupt_cancels_a_slow_call_and_the_kernel_stays_usable(kernel, slow_agent):
    kernel.run(SLOW_TOOLS)
    kernel.run(f"%load_ext cireil\n%cireil load {slow_agent} --tools slow_tools")
    msg_id = kernel.submit("%cireil_slow")  # 30 s unless interrupted
    time.sleep(1)
    started = time.monotonic()
    kernel.interrupt()
    run = kernel.collect(msg_id, timeout=25)
    assert time.monotonic() - started < 10
    assert run.status == "error"
    assert run.error["ename"] == "KeyboardInterrupt"
    assert kernel.run("1 + 1").result["text/plain"] == "2"
    assert kernel.run("%cireil_slow 0.1").result["application/vnd.cireil.result+json"] == {
        "slept": 0.1,
        "success": True,
    }
    assert kernel.run("%cireil_list_dir /workspace").result["application/vnd.cireil.result+json"]["success"] is True


def test_unload_and_load_again(kernel, agent_dir):
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}\n%cireil_list_dir /workspace")
    run = kernel.run(
        "%unload_ext cireil\n"
        "import threading\n"
        "ip = get_ipython()\n"
        "sorted(n for n in ip.magics_manager.magics['line'] if n.startswith('cireil')),"
        " [t.name for t in threading.enumerate() if t.name == 'cireil-runtime']"
    )
    assert run.result["text/plain"] == "([], [])"
    run = kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}\n%cireil_list_dir /workspace")
    assert run.result["application/vnd.cireil.result+json"]["success"] is True
    run = kernel.run("%reload_ext cireil", ok=True)
    run = kernel.run(f"%cireil load {agent_dir}\n%cireil_session_info")
    assert run.result["application/vnd.cireil.result+json"]["session_id"] == "notebook:main"
