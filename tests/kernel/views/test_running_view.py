"""What a running call looks like: exec's live panel (early output, elapsed time), a neutral line for every
other tool, and how an interrupt or Cancel leaves the view — in magics and in widget forms."""

from __future__ import annotations

import time

import pytest

from conftest import MINIMAL_TOOLS, make_agent
from exec_agent import exec_agent
from kernelharness import Kernel

SLOW_TOOL = """\
import asyncio
import cireil
from cireil.params import Number, Params

async def run_slow(args, ctx):
    await asyncio.sleep(args["seconds"])
    return {"slept": args["seconds"], "success": True}

slow_tool = cireil.Tool("slow", "Sleep for a while.", Params(seconds=Number()), run_slow)
"""


SLOW_TOOLS = MINIMAL_TOOLS + "slow = true\n"


class Recorder:
    """Stands in for a form's Output widget: records the text/plain of every assignment."""

    def __init__(self) -> None:
        self._outputs: tuple = ()
        self.shown: list[str] = []

    @property
    def outputs(self) -> tuple:
        return self._outputs

    @outputs.setter
    def outputs(self, value: tuple) -> None:
        self._outputs = value
        self.shown.append(value[0]["data"]["text/plain"])


def _slow_tool():
    namespace: dict = {}
    exec(SLOW_TOOL, namespace)
    return namespace["slow_tool"]


def _wait(condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_silent_command_in_a_form_shows_its_early_output_and_the_time_while_it_runs(tmp_path):
    import cireil
    from cireil.kernel.forms.toolform import tool_form

    form = tool_form(cireil.load(exec_agent(tmp_path)), "exec")
    form.output = recorder = Recorder()
    form.fields["command"].control.value = "sh"
    for word in ("-c", "echo early; sleep 1.5"):
        form.fields["args"].add(word)
    form.run_button.click()
    assert form.wait(20)
    live = recorder.shown[:-1]
    # printed at once, then silence: the panel still shows the output and a moving clock
    assert any("early" in text and "running · " in text for text in live), recorder.shown
    assert len({text.split("running · ")[1].split(" s")[0] for text in live if "running · " in text}) >= 2
    assert "exit 0" in recorder.shown[-1]


def test_cancel_in_a_form_keeps_the_output_and_says_cancelled(tmp_path):
    import cireil
    from cireil.kernel.forms.toolform import tool_form

    form = tool_form(cireil.load(exec_agent(tmp_path)), "exec")
    form.output = recorder = Recorder()
    form.fields["command"].control.value = "sh"
    for word in ("-c", "echo partial; sleep 60"):
        form.fields["args"].add(word)
    form.run_button.click()
    _wait(lambda: any("partial" in t for t in recorder.shown))
    form.cancel_button.click()
    assert form.wait(20)
    assert "cancelled after" in recorder.shown[-1] and "partial" in recorder.shown[-1]
    assert "running" not in recorder.shown[-1]
    assert "cancelled after" in form.status.value


def test_a_slow_tool_without_live_output_gets_a_neutral_line_in_a_form(tmp_path):
    import cireil
    from cireil.kernel.forms.toolform import tool_form

    form = tool_form(cireil.load(make_agent(tmp_path, SLOW_TOOLS), tools=[_slow_tool()]), "slow")
    form.output = recorder = Recorder()
    form.fields["seconds"].control.value = 1.2
    form.run_button.click()
    assert form.wait(20)
    live = recorder.shown[:-1]
    assert live and all(text.startswith("running slow … ") for text in live), recorder.shown
    assert not any("$" in text for text in recorder.shown)  # not exec's panel with an empty command
    assert '"slept": 1.2' in recorder.shown[-1]


@pytest.fixture
def slow_kernel(tmp_path):
    agent = make_agent(tmp_path, SLOW_TOOLS)
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(SLOW_TOOL + f"\n%load_ext cireil\n%cireil load {agent} --tools slow_tool")
        yield kernel
    finally:
        kernel.shutdown()


def test_a_slow_tool_without_live_output_gets_a_neutral_line_in_a_magic(slow_kernel):
    run = slow_kernel.run("%cireil_slow seconds=1")
    live = [b["text/plain"] for b in run.bundles if b is not run.result and b.get("text/plain")]
    assert live and all(t.startswith("running slow … ") for t in live), live
    assert "interrupt the kernel" in live[0]  # how to cancel it from a magic
    assert run.result["application/vnd.cireil.result+json"]["slept"] == 1


def test_interrupting_a_slow_tool_marks_its_line_and_ends_with_one_line(slow_kernel):
    msg_id = slow_kernel.submit("%cireil_slow seconds=60")
    time.sleep(1.5)
    slow_kernel.interrupt()
    run = slow_kernel.collect(msg_id, timeout=30)
    assert run.error["traceback"] == [run.error["traceback"][0]]
    assert run.error["traceback"][0].startswith("KeyboardInterrupt: slow interrupted after ")
    assert run.bundles[-1]["text/plain"].startswith("slow interrupted after ")
    assert slow_kernel.run("1 + 1").result["text/plain"] == "2"


def test_the_exec_header_shows_the_command_as_typed():
    from cireil.render.exec import live_bundle

    def header(command: str, *args: str) -> str:
        return live_bundle({"command": command, "args": list(args)}, {}, {}, 0.5)["text/plain"].splitlines()[0]

    assert header("python3", "-c", "print('started', flush=True)") == """$ python3 -c "print('started', flush=True)\""""
    assert header("ls", "-la", "/workspace") == "$ ls -la /workspace"
    assert header("sh", "-c", 'echo "$HOME"') == """$ sh -c 'echo "$HOME"'"""
    assert header("echo", "") == "$ echo ''"
