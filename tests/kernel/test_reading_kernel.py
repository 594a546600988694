"""In a real kernel: reading the demo handbook shows its outline, and an open button pins a section."""

from __future__ import annotations

import json
import time

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

SETUP = """\
%load_ext cireil
import cireil
from cireil.runtime.scaffold import copy_demo
agent = cireil.load(copy_demo())
agent.call("read", path="/workspace/garden-handbook.md")
"""


def _button_id(kernel, description: str, tooltip_start: str = "") -> str:
    for msg in kernel.comm_messages:
        if msg["msg_type"] != "comm_open":
            continue
        state = msg["content"]["data"].get("state", {})
        if (
            state.get("_model_name") == "ButtonModel"
            and state.get("description") == description
            and (state.get("tooltip") or "").startswith(tooltip_start)
        ):
            return msg["content"]["comm_id"]
    raise AssertionError(f"no button {description!r}")


def _output_texts(kernel) -> list[str]:
    """text/plain of every output an Output widget was updated with."""
    texts = []
    for msg in kernel.comm_messages:
        state = msg["content"].get("data", {}).get("state", {})
        for output in state.get("outputs", []) or []:
            texts.append(output.get("data", {}).get("text/plain", ""))
    return texts


def test_outline_renders_and_its_open_button_pins_a_section(kernel):
    run = kernel.run(SETUP)
    bundle = run.result
    assert WIDGET_MIME in bundle  # the interactive view, with text fallbacks
    assert "<details" in bundle["text/html"] and "watering-1" in bundle["text/html"]
    assert "[composting-at-the-garden]" in bundle["text/plain"]
    # the open action on the section's own row of the tree
    button = _button_id(kernel, "open", "pin section the-growing-year ")
    kernel.send_comm(button, {"method": "custom", "content": {"event": "click"}})
    deadline = time.monotonic() + 30
    pinned: dict = {}
    while time.monotonic() < deadline:
        kernel.drain(0.2)
        out = kernel.run(
            "import json; print(json.dumps({k: list(v) for k, v in agent.session.active_sections.items()}))"
        )
        pinned = json.loads(out.stdout.strip())
        if pinned:
            break
    assert pinned == {"/workspace/garden-handbook.md": ["the-growing-year"]}
    # the view in place of the outline is now the open-file result, showing what is pinned
    kernel.drain(0.5)
    assert any("pinned sections: the-growing-year" in text for text in _output_texts(kernel))
    context = kernel.run("%cireil load --demo\n%cireil_open_file /workspace/notes.txt\n%cireil context")
    assert '<file path="/workspace/notes.txt"' in context.text()
