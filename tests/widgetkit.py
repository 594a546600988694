"""Widget forms in a real kernel, driven through the comm layer exactly as a front end drives them: show a tool's
form, set a control, click a button, read what an Output widget shows (shared by the widget, form, edit and step
mode kernel tests)."""

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
