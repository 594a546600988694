"""A JS plugin tool of the original used as the agent uses it: called by the model inside a turn (run in its
worker, its result in the next model request and in sessions.db), and from its form (Run, and Cancel of a call
that hangs)."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import ipywidgets as W
import pytest

import cireil
from cireil.kernel.forms.toolform import tool_form
from cireil.testing.scripted_llm import reply
from turnkit import engine_toml

pytest_plugins = ("jskit",)  # fixtures: js (Node 22 and the original's checkout), original_install

TALLY = """\
"tally": {
  description: "Count the words of a text.",
  parameters: vb.strictObject({ text: vb.pipe(vb.string(), vb.description("The text to count")) }),
  async execute(input, ctx) {
    const words = input.text.split(/\\s+/u).filter(Boolean).length;
    return { success: true, words, pid: process.pid, session: ctx.session.id(), channel: ctx.session.channel };
  },
},
"hangs": {
  description: "Never returns.",
  parameters: vb.strictObject({}),
  async execute() { await new Promise(() => {}); },
},
"""
TOOLS = "respond = true\nno-response = true\nlist-dir = true\ntally = true\nhangs = true\n"


@pytest.fixture
def agent(js, tmp_path, llm):
    directory = js.root(tmp_path, '[[plugins]]\nname = "counter"\n', TOOLS)
    js.plugin(directory, "counter", TALLY)
    (directory / "config" / "engine.toml").write_text(engine_toml(llm.base_url))
    loaded = cireil.load(directory)
    assert loaded.warnings == []
    yield loaded
    loaded.close()


def test_the_model_calls_a_plugin_tool_in_a_turn_and_its_result_is_sent_and_stored(agent, llm):
    llm.script(
        reply.tool_calls(("tally", {"text": "plant beans after the frost"}, "call_tally")),
        reply.tool_calls(("respond", {"content": "Five words."})),
    )
    outcome = agent.turn("how many words?")
    assert outcome.ended == "respond" and outcome.text == "Five words."

    first, second = (r.body for r in llm.requests)
    # offered to the model with the schema the plugin declares, like any tool
    [offered] = [t["function"] for t in first["tools"] if t["function"]["name"] == "tally"]
    assert offered["description"] == "Count the words of a text."
    assert offered["parameters"]["properties"]["text"] == {"type": "string", "description": "The text to count"}

    # it ran in the plugin's Node worker, in the turn's session, and the next request carries its result
    [message] = [m for m in second["messages"] if m["role"] == "tool" and m["tool_call_id"] == "call_tally"]
    sent = json.loads(message["content"])
    assert sent["words"] == 5 and sent["success"] is True
    assert sent["pid"] != os.getpid()
    with open(f"/proc/{sent['pid']}/cmdline", "rb") as cmdline:
        assert b"host.mjs" in cmdline.read()  # the plugin host, not this process
    assert sent["session"] == agent.session.id and sent["channel"] == "internal"

    # and sessions.db stores the call and its result, as the turn's other steps
    with sqlite3.connect(agent.directory / "sessions.db") as db:
        rows = [json.loads(h) for (h,) in db.execute("SELECT history FROM sessions")]
    [history] = [h for h in rows if "plant beans after the frost" in json.dumps(h)]
    call, response = (m["content"] for m in history if m["content"].get("id") == "call_tally")
    assert call == {
        "id": "call_tally",
        "name": "tally",
        "input": {"text": "plant beans after the frost"},
        "type": "toolCall",
    }
    assert response["type"] == "toolResponse" and response["output"] == {k: v for k, v in sent.items() if k != "name"}


def test_a_plugin_tool_form_runs_it_and_cancel_ends_a_hanging_call_at_once(agent):
    form = tool_form(agent, "tally")
    assert isinstance(form, W.Widget)
    assert repr(form) == "<cireil form tally(text*)>"
    assert "Count the words of a text." in form.children[0].value
    form.fields["text"].control.value = "one two three"
    form.run_button.click()
    assert form.wait(30)
    result = form.last_call.result(0)
    assert result.success and result["words"] == 3
    shown = form.output.outputs[0]["data"]["text/plain"]
    assert "3" in shown
    pid = result["pid"]

    hanging = tool_form(agent, "hangs")
    hanging.run_button.click()
    time.sleep(0.5)  # the call reached the worker
    assert not hanging.wait(0), hanging.problems.value
    started = time.monotonic()
    hanging.cancel_button.click()
    assert hanging.wait(5)
    assert time.monotonic() - started < 3
    assert "cancel" in hanging.status.value
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the worker that hung is ended, not left behind
    again = agent.call("tally", text="still here")
    assert again.success and again["pid"] != pid  # a fresh worker on the next call
