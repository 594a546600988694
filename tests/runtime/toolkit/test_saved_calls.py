"""Saved calls: each call a person makes (form, magic, Python) is kept per agent in this kernel; forms refill."""

from __future__ import annotations

import cireil
from cireil.kernel.forms.toolform import tool_form
from conftest import make_agent
from mcp_peers.launch import mcp_toml

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK and rogue servers


def test_calls_from_every_surface_are_kept_newest_first(tmp_path):
    agent = cireil.load(make_agent(tmp_path, "list-dir = true\nwrite = true\n"))
    try:
        args = {"path": "/workspace/a.txt", "content": "one"}
        agent.call("write", args)
        args["content"] = "changed after the call"  # history keeps what was sent
        agent.call("write", path="/etc/nope.txt", content="x")
        calls = agent.calls("write")
        assert [c.arguments["content"] for c in calls] == ["x", "one"]
        assert [c.success for c in calls] == [False, True]
        assert calls[0].summary.startswith("failed: ") and calls[0].when.endswith("Z")
        assert calls[1].as_dict()["arguments"] == {"path": "/workspace/a.txt", "content": "one"}
        assert agent.calls("list-dir") == [] and agent.calls("list_dir") == []
        from cireil.runtime.toolkit.calllog import summarize

        assert summarize({"content": [{"type": "text", "text": '{\n  "city": "Porto"\n}'}]}) == '{"city":"Porto"}'
        agent.call("list_dir", path="/workspace")
        assert agent.calls("list_dir")[0].tool == "list-dir"
    finally:
        agent.close()


def test_a_form_lists_earlier_calls_and_one_click_refills_it(tmp_path, sdk_sse):
    agent_dir = make_agent(tmp_path, "mcp__demo__add = true\nwrite = true\n")
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
    agent = cireil.load(agent_dir)
    try:
        form = tool_form(agent, "mcp__demo__add")
        assert form.history.layout.display == "none"  # nothing to show yet
        form.fields["a"].control.value = 4
        form.fields["b"].control.value = 5
        form.run_button.click()
        assert form.wait(10)
        agent.call("mcp__demo__add", a=1, b=1)  # made elsewhere (a magic, Python): the form shows it too
        form.history.refresh()
        labels = [label for label, _ in form.history.picker.options]
        assert len(labels) == 2 and "→ 2" in labels[0] and "→ 9" in labels[1] and "✓" in labels[1]
        form.history.picker.value = 1  # one click on the older call
        assert form.collect().value == {"a": 4, "b": 5}
        assert "refilled from the call of" in form.history.note.value
        form.fields["b"].control.value = 6  # re-run with an edit
        form.run_button.click()
        assert form.wait(10) and form.last_call.result(0)["content"][0]["text"] == "10"
        assert [c.arguments for c in agent.calls("mcp__demo__add")][:1] == [{"a": 4, "b": 6}]
        assert "→ 10" in form.history.picker.options[0][0]

        write = tool_form(agent, "write")
        agent.call("write", path="/workspace/<b>.txt", content="hello")
        write.history.refresh()
        write.history.pick(0)
        assert write.collect().value == {"path": "/workspace/<b>.txt", "content": "hello"}
        assert "<b>" not in write.history.heading.value + write.history.note.value
    finally:
        agent.close()
