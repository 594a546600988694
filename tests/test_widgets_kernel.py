"""Widget forms in a real kernel, driven through the comm layer exactly as a front end drives them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

SETUP = """\
import json
import cireil
from cireil.kernel.forms.toolform import tool_form
agent = cireil.load({directory!r}{extra})
form = tool_form(agent, {tool!r})
print(json.dumps({{"field": form.fields[{field!r}].control.model_id,
                  "button": form.run_button.model_id, "output": form.output.model_id}}))
form
"""

SLOW_TOOL = """\
import asyncio
from cireil.params import Number, Params

async def run_slow(args, ctx):
    await asyncio.sleep(args["seconds"])
    return {"slept": args["seconds"], "success": True}

slow_tool = cireil.Tool("slow", "Sleep for a while.", Params(seconds=Number()), run_slow)
"""


def show_form(kernel, directory, tool: str, field: str, *, extra: str = "") -> dict[str, str]:
    run = kernel.run(SETUP.format(directory=str(directory), tool=tool, field=field, extra=extra))
    ids = json.loads(run.stdout.strip().splitlines()[-1])
    # the form itself is displayed as a widget view
    assert any("application/vnd.jupyter.widget-view+json" in b for b in run.bundles)
    return ids


def set_value(kernel, model_id: str, value) -> None:
    kernel.send_comm(model_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})


def click(kernel, model_id: str) -> None:
    kernel.send_comm(model_id, {"method": "custom", "content": {"event": "click"}})


def output_updates(kernel, model_id: str) -> list[list[dict]]:
    """Every `outputs` state the kernel has sent for the Output widget `model_id`, oldest first."""
    found = []
    for msg in kernel.comm_messages:
        content = msg["content"]
        data = content.get("data", {})
        if content.get("comm_id") == model_id and data.get("method") == "update" and "outputs" in data["state"]:
            found.append(data["state"]["outputs"])
    return found


def wait_for_output(kernel, model_id: str, accept: Callable[[str], bool], timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernel.drain(0.2)
        for outputs in output_updates(kernel, model_id):
            text = "\n".join(o.get("data", {}).get("text/plain", "") for o in outputs)
            if accept(text):
                return outputs
    raise AssertionError(f"no matching output for {model_id}; seen: {output_updates(kernel, model_id)}")


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
