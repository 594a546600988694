"""`%%cireil_agent --step` in a real kernel, its buttons clicked through the comm layer as a front end does:
Approve, Edit arguments (refused, then accepted), Skip, Mock result; Stop, `%cireil stop` and a kernel
interrupt while a call waits. The cell returns at once; the clicks arrive between cells, as in JupyterLab."""

from __future__ import annotations

import json

import pytest

from cireil.testing.scripted_llm import reply
from kernelharness import Kernel
from turnkit import turn_agent
from widgetkit import click, set_value

HELPERS = """\
import json, time
import cireil
from cireil.kernel.magics.liveturns import LIVE

def step_view():
    return LIVE[id(cireil.current_agent())]

def wait_pending(name, timeout=30):
    global t
    t = step_view()
    deadline = time.monotonic() + timeout
    while (t.pending or {}).get("name") != name:
        assert time.monotonic() < deadline, f"no call of {name} waits; pending: {t.pending}"
        time.sleep(0.02)
    names = ("approve_button", "edit_button", "skip_button", "mock_button", "stop_button", "status", "problems")
    print(json.dumps({**{n: getattr(t, n).model_id for n in names}, "pending": t.pending}))
"""


@pytest.fixture
def stepping(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    (agent / "workspace" / "other.md").write_text("Buy eggs.\n")
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}\n" + HELPERS)
        yield kernel, agent
    finally:
        kernel.shutdown()


def pending(kernel: Kernel, name: str) -> dict:
    return json.loads(kernel.run(f"wait_pending({name!r})").stdout.strip().splitlines()[-1])


def py(kernel: Kernel, code: str) -> str:
    return kernel.run(code).stdout.strip()


def widget_texts(kernel: Kernel) -> str:
    """Every text/plain the kernel has put into an Output widget so far (the step view's drawing)."""
    kernel.drain(0.3)
    found = []
    for msg in kernel.comm_messages:
        state = msg["content"].get("data", {}).get("state", {})
        for output in state.get("outputs") or ():
            found.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(found)


def tool_results(body: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def test_approve_edit_skip_and_mock_through_the_comm_layer(stepping, llm):
    kernel, agent = stepping
    llm.script(
        reply.tool_calls(
            ("read", {"path": "/workspace/notes.md"}),
            ("write", {"path": "/workspace/out.txt", "content": "x"}),
            ("list-dir", {"path": "/workspace"}),
            ("session-info", {}),
        ),
        reply.tool_calls(("respond", {"content": "all done"})),
    )
    cell = kernel.run("%%cireil_agent --step\ntidy my notes")
    assert any("application/vnd.jupyter.widget-view+json" in b for b in cell.bundles)  # returned: the turn goes on

    ids = pending(kernel, "read")
    assert ids["pending"]["input"] == {"path": "/workspace/notes.md"}
    assert len(llm.requests) == 1  # paused before the call: nothing ran, the model was asked once
    click(kernel, ids["edit_button"])
    form = json.loads(
        py(kernel, 'print(json.dumps([t.edit_form.fields["path"].control.model_id, t.apply_button.model_id]))')
    )
    assert py(kernel, 'print(t.edit_form.collect().value["path"])') == "/workspace/notes.md"  # filled in
    assert py(kernel, 'print(t.edit_form.collect().value["raw"])') == "False"  # a default the model left out
    set_value(kernel, form[0], "")
    click(kernel, form[1])
    # refused by the form: the call still waits, nothing ran
    assert py(kernel, "print(t.pending['name'], 'path' in t.problems.value)") == "read True"
    set_value(kernel, form[0], "/workspace/other.md")
    click(kernel, form[1])

    ids = pending(kernel, "write")
    click(kernel, ids["skip_button"])

    ids = pending(kernel, "list-dir")
    click(kernel, ids["mock_button"])
    mock = json.loads(py(kernel, "print(json.dumps([t.mock_text.model_id, t.apply_button.model_id]))"))
    set_value(kernel, mock[0], '{"entries": ["invented.txt"], "success": true')  # not JSON yet: refused
    click(kernel, mock[1])
    assert py(kernel, "print(t.pending['name'], 'not one' in t.problems.value)") == "list-dir True"
    set_value(kernel, mock[0], '{"entries": ["invented.txt"], "success": true}')
    click(kernel, mock[1])

    ids = pending(kernel, "session-info")
    click(kernel, ids["approve_button"])
    ids = pending(kernel, "respond")
    assert ids["pending"]["input"] == {"content": "all done"}
    click(kernel, ids["approve_button"])
    assert py(kernel, "print(t.wait(30), t.outcome.ended, id(cireil.current_agent()) in LIVE)") == "True respond False"
    late = "from cireil.runtime.engine.toolhook import ToolDecision\nprint(t.decide(ToolDecision.approve()))"
    assert py(kernel, late) == "False"  # a click that comes too late settles nothing

    read, write, listing, info = tool_results(llm.requests[1].body)
    assert read["content"] == "Buy eggs.\n"  # ran with the edited arguments
    assert write["skipped"] is True and write["success"] is False
    assert not (agent / "workspace" / "out.txt").exists()
    assert listing == {"name": "list-dir", "entries": ["invented.txt"], "success": True}
    assert info["success"] is True and info["session_id"] == "notebook:main"
    assert len(llm.requests) == 2

    drawn = widget_texts(kernel)
    assert "you edited the arguments of this call" in drawn
    assert "you skipped this call" in drawn and "you gave the model this result" in drawn
    assert "all done" in drawn and "turn ended with a final respond" in drawn
    assert "recorded turn 1: 2 model calls" in drawn
    # the call line of the edited call shows, once it ran, the arguments it ran with (issue 34)
    shown = json.loads(
        py(
            kernel,
            "print(json.dumps([o.outputs[0]['data'].get('text/plain', '') for o in t.transcript.children"
            " if o.outputs]))",
        )
    )
    calls = [line for line in shown if line.startswith("→ ")]
    assert calls[0].startswith("→ read (edited) {") and '"/workspace/other.md"' in calls[0], calls
    assert calls[1].startswith("→ write {") and '"/workspace/out.txt"' in calls[1]  # skipped: as the model asked

    # the recording keeps what the person did with each call
    recorded = json.loads(
        py(kernel, "print(json.dumps([(c.name, c.review) for c in cireil.current_agent().turns()[-1].calls]))")
    )
    assert recorded == [
        ["read", {"action": "edited", "asked": {"path": "/workspace/notes.md"}}],
        ["write", {"action": "skipped"}],
        ["list-dir", {"action": "mocked"}],
        ["session-info", {"action": "approved"}],
        ["respond", {"action": "approved"}],
    ]
    ran = py(kernel, "print(json.dumps(cireil.current_agent().turns()[-1].calls[0].arguments))")
    assert json.loads(ran) == {"path": "/workspace/other.md"}  # what the person changed, not the form's defaults
    steps = kernel.run("%cireil steps").text()
    assert "called read (edited), write (skipped), list-dir (mocked), session-info" in steps
    assert "the model asked for" in "\n".join(b.get("text/html", "") for b in kernel.run("%cireil steps").bundles)


def test_a_kernel_interrupt_while_paused_ends_the_turn_storing_nothing_of_it(stepping, llm):
    kernel, agent = stepping
    llm.script(
        reply.tool_calls(("session-info", {})),
        reply.tool_calls(("write", {"path": "/workspace/late.txt", "content": "x"})),
    )
    kernel.run("%%cireil_agent --step\ngo")
    click(kernel, pending(kernel, "session-info")["approve_button"])
    pending(kernel, "write")
    busy = kernel.run("%%cireil_agent\nanother message", ok=False)  # would wait for the paused turn forever
    assert "step-mode turn of this agent is still live" in busy.text()
    kernel.interrupt()  # the kernel is idle (that cell's reply came): between cells, as ■ in JupyterLab
    assert py(kernel, "print(t.wait(30), t.outcome.ended, 'stopped' in t.status.value)") == "True interrupted True"
    roles = py(kernel, "print([m['role'] for m in cireil.current_agent().session.history])")
    assert roles == "[]"  # as the original: an interrupted turn leaves nothing (the recorder keeps it)
    assert not (agent / "workspace" / "late.txt").exists()
    # the model call of step 2 happened (and was paid for): recorded, without the call that never ran
    recorded = py(
        kernel, "r = cireil.current_agent().turns()[-1]; print(r.ended, [(s.n, len(s.calls)) for s in r.steps])"
    )
    assert recorded == "interrupted [(1, 1), (2, 0)]"
    # the agent takes the next message as usual, and a later interrupt between cells harms nothing
    llm.script(reply.tool_calls(("respond", {"content": "back again"})))
    assert "back again" in kernel.run("%%cireil_agent\nhello").text()
    kernel.interrupt()
    assert py(kernel, "print(1 + 1)") == "2"


def test_the_stop_button_and_cireil_stop_end_a_waiting_turn(stepping, llm):
    kernel, agent = stepping
    write = ("write", {"path": "/workspace/late.txt", "content": "x"})
    llm.script(reply.tool_calls(write), reply.tool_calls(write))
    kernel.run("%%cireil_agent --step\nfirst")
    click(kernel, pending(kernel, "write")["stop_button"])
    assert py(kernel, "print(t.wait(30), t.outcome.ended, t.stop_button.disabled)") == "True interrupted True"

    kernel.run("%%cireil_agent --step\nsecond")
    pending(kernel, "write")
    stopped = kernel.run("%cireil stop")
    assert "nothing of this turn is stored in the session" in stopped.stdout
    assert py(kernel, "print(t.ended.is_set(), t.outcome.ended, t.pending)") == "True interrupted None"
    assert not (agent / "workspace" / "late.txt").exists()
    assert "no step-mode turn is live: nothing to stop" in kernel.run("%cireil stop").stdout
    roles = py(kernel, "print([m['role'] for m in cireil.current_agent().session.history])")
    assert roles == "[]"  # nothing of either interrupted turn
    # unloading the extension gives the kernel back the idle interrupt handler it had before step mode
    before = "k = get_ipython().kernel; print(getattr(k.saved_sigint_handler, 'cireil_step_mode', False))"
    assert py(kernel, before) == "True"
    kernel.run("%unload_ext cireil")
    assert py(kernel, before) == "False"
    kernel.interrupt()
    assert py(kernel, "print(1 + 1)") == "2"
