"""edit in a real kernel: the cell form, and a dry-run's Apply button clicked through the comm layer."""

from __future__ import annotations

import time

from conftest import make_agent
from widgetkit import click, output_updates

TOOLS = "list-dir = true\nwrite = true\nedit = true\n"

CELL = """\
%%cireil_edit /workspace/app.py --dry-run
<<<<<<< SEARCH
    return "hi " + name
=======
    return f"hi {name}!"
>>>>>>> REPLACE
"""


def _opened(run, model: str) -> list[dict]:
    """The widget models of `model` kind the cell created, as (comm_id, state)."""
    out = []
    for msg in run.messages:
        if msg["msg_type"] == "comm_open":
            state = msg["content"]["data"].get("state", {})
            if state.get("_model_name") == model:
                out.append({"id": msg["content"]["comm_id"], **state})
    return out


def _wait_html(kernel, model_id: str, needle: str, timeout: float = 30) -> dict:
    """The first bundle the Output widget `model_id` showed whose HTML contains `needle`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernel.drain(0.2)
        for outputs in output_updates(kernel, model_id):
            for out in outputs:
                if needle in out.get("data", {}).get("text/html", ""):
                    return out["data"]
    raise AssertionError(f"the view never showed {needle!r}")


def test_dry_run_cell_shows_a_patch_and_apply_writes_it(kernel, tmp_path):
    agent = make_agent(tmp_path, TOOLS)
    app = agent / "workspace" / "app.py"
    app.write_text('def greet(name):\n\treturn "hi " + name\n')
    kernel.run(f"%load_ext cireil\n%cireil load {agent}")
    run = kernel.run(CELL)
    bundle = next(b for b in run.bundles if "text/plain" in b)
    assert '-\treturn "hi " + name\n+\treturn f"hi {name}!"' in bundle["text/plain"]
    assert app.read_text() == 'def greet(name):\n\treturn "hi " + name\n'  # a preview writes nothing
    buttons = {b["description"]: b["id"] for b in _opened(run, "ButtonModel")}
    assert set(buttons) >= {"Apply", "Discard"}
    [output] = [o["id"] for o in _opened(run, "OutputModel")]
    click(kernel, buttons["Apply"])
    applied = _wait_html(kernel, output, "Successfully applied dry-run")
    assert applied["application/vnd.cireil.result+json"]["success"] is True
    assert applied["text/plain"] == bundle["text/plain"]  # the same body patch, now applied
    assert app.read_text() == 'def greet(name):\n\treturn f"hi {name}!"\n'  # the file's tab is kept
