"""Widget forms in a real kernel, driven through the comm layer exactly as a front end drives them."""

from __future__ import annotations

import time

from widgetkit import click, output_updates, set_value, show_form, wait_for_output

SLOW_TOOL = """\
import asyncio
from cireil.params import Number, Params

async def run_slow(args, ctx):
    await asyncio.sleep(args["seconds"])
    return {"slept": args["seconds"], "success": True}

slow_tool = cireil.Tool("slow", "Sleep for a while.", Params(seconds=Number()), run_slow)
"""


def test_run_click_through_comms_shows_result(kernel, agent_dir):
    ids = show_form(kernel, agent_dir, "list-dir", "path")
    set_value(kernel, ids["field"], "/workspace")
    click(kernel, ids["button"])
    outputs = wait_for_output(kernel, ids["output"], lambda text: "hello.txt" in text, timeout=30)
    assert len(outputs) == 1 and outputs[0]["output_type"] == "display_data"
    bundle = outputs[0]["data"]
    assert bundle["application/vnd.cireil.result+json"]["success"] is True
    assert "<table" in bundle["text/html"]
    # the value sent through the comm is what the call used
    check = kernel.run("print(form.wait(10), form.last_call.result().args, form.run_button.disabled)")
    assert check.stdout.strip() == "True {'path': '/workspace'} False"


def test_missing_required_field_through_comms_does_not_call(kernel, agent_dir):
    ids = show_form(kernel, agent_dir, "list-dir", "path")
    click(kernel, ids["button"])
    kernel.drain(1.0)
    check = kernel.run("print(form.last_call is None, 'required' in form.problems.value)")
    assert check.stdout.strip() == "True True"
    assert output_updates(kernel, ids["output"]) == []


def test_queued_cell_runs_while_widget_call_in_flight(kernel, agent_dir):
    tools_toml = agent_dir / "config" / "tools.toml"
    tools_toml.write_text(tools_toml.read_text() + "slow = true\n")
    kernel.run("import cireil\n" + SLOW_TOOL)
    ids = show_form(kernel, agent_dir, "slow", "seconds", extra=", tools=[slow_tool]")
    set_value(kernel, ids["field"], 5)
    click(kernel, ids["button"])
    started = time.monotonic()
    cell = kernel.run("1 + 1", timeout=30)
    elapsed = time.monotonic() - started
    assert cell.result["text/plain"] == "2"
    assert elapsed < 2.5, f"a cell queued behind a widget call took {elapsed:.1f}s"
    # the widget call was still running while that cell ran
    busy = kernel.run("print(form.run_button.disabled, form.last_call.done(), form.status.value)")
    assert busy.stdout.startswith("True False") and "running" in busy.stdout
    outputs = wait_for_output(kernel, ids["output"], lambda text: "slept" in text, timeout=30)
    assert outputs[0]["data"]["application/vnd.cireil.result+json"] == {"slept": 5, "success": True}
    assert time.monotonic() - started >= 4.5
    done = kernel.run("print(form.wait(10), form.run_button.disabled)")
    assert done.stdout.strip() == "True False"
