"""Results that offer follow-up actions show as a widget with a button per action."""

from __future__ import annotations

import time

import pytest

import cireil
from cireil import render
from cireil.kernel.display import result_mimebundle
from cireil.params import Integer, Params

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


async def _bump(args, ctx):
    return {"n": args["n"], "success": True}


BUMP = cireil.Tool("bump", "Return n.", Params(n=Integer()), _bump, main_arg="n")


def _bump_view(result):
    return f"n = {result.data['n']}", f"<b>n = {result.data['n']}</b>"


def _bump_actions(result):
    return [render.Action("+1", "bump", {"n": result.data["n"] + 1}, style="primary")]


@pytest.fixture
def bump_agent(agent_dir):
    (agent_dir / "config" / "tools.toml").write_text("list-dir = true\nbump = true\n")
    render.register_view("bump", _bump_view, _bump_actions)
    try:
        yield cireil.load(agent_dir, tools=[BUMP])
    finally:
        render._REGISTERED.pop("bump", None)


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_result_with_actions_carries_a_widget_view_and_keeps_fallbacks(bump_agent):
    bundle = result_mimebundle(bump_agent.call("bump", n=1), widgets=True)
    assert WIDGET_MIME in bundle
    assert bundle["text/plain"] == "n = 1"
    assert bundle["application/vnd.cireil.result+json"] == {"n": 1, "success": True}


def test_results_without_actions_stay_plain(bump_agent):
    bundle = result_mimebundle(bump_agent.call("list-dir", path="/workspace"), widgets=True)
    assert WIDGET_MIME not in bundle
    assert set(bundle) == {"text/plain", "text/html", "application/vnd.cireil.result+json"}


def test_without_the_extension_no_widget_is_made(bump_agent):
    assert WIDGET_MIME not in result_mimebundle(bump_agent.call("bump", n=1))


def test_pressing_an_action_replaces_the_view_with_the_new_result(bump_agent):
    from cireil.kernel.views.result import ResultView

    view = ResultView(bump_agent.call("bump", n=1))
    [button] = view.buttons.children
    assert button.description == "+1"
    button.click()
    _wait(lambda: view.result.data["n"] == 2)
    assert view.output.outputs[0]["data"]["text/plain"] == "n = 2"
    [button] = view.buttons.children
    assert not button.disabled and view.status.value == ""


def test_an_action_that_cannot_run_says_why_and_keeps_the_view(bump_agent, agent_dir):
    from cireil.kernel.views.result import ResultView

    view = ResultView(bump_agent.call("bump", n=1))
    (agent_dir / "config" / "tools.toml").write_text("list-dir = true\nbump = false\n")
    view.buttons.children[0].click()
    assert "bump" in view.status.value and "not enabled" in view.status.value
    assert view.result.data["n"] == 1
    assert not view.buttons.children[0].disabled


def _offer_with_dismiss(result):
    return [render.Action("+1", "bump", {"n": result.data["n"] + 1}), render.Action("Discard", "")]


def test_an_action_without_a_tool_dismisses_the_offer_without_a_call(bump_agent):
    from cireil.kernel.views.result import ResultView

    render.register_view("bump", _bump_view, _offer_with_dismiss)
    view = ResultView(bump_agent.call("bump", n=1))
    discard = view.buttons.children[1]
    assert discard.description == "Discard"
    discard.click()
    assert view.buttons.children == ()
    assert "dismissed" in view.status.value
    assert view.result.data["n"] == 1 and view.output.outputs[0]["data"]["text/plain"] == "n = 1"


def test_discarding_an_edit_preview_says_discarded_and_offers_nothing(agent_dir):
    from cireil.kernel.views.result import ResultView

    (agent_dir / "config" / "tools.toml").write_text("list-dir = true\nedit = true\n")
    agent = cireil.load(agent_dir)
    edits = [{"oldText": "hello", "newText": "hi"}]
    preview = agent.call("edit", path="/workspace/hello.txt", edits=edits, dryRun=True)
    view = ResultView(preview)
    [discard] = [b for b in view.buttons.children if b.description == "Discard"]
    discard.click()
    shown = view.output.outputs[0]["data"]
    assert view.buttons.children == ()
    assert shown["text/plain"].startswith("discarded: the preview of /workspace/hello.txt")
    assert "not written yet" not in shown["text/html"] and "applyId" not in shown["text/html"]
    assert (agent_dir / "workspace" / "hello.txt").read_text() == "hello\n"


def test_open_stdout_opens_below_and_the_exec_result_stays(tmp_path):
    from cireil.kernel.views.result import ResultView
    from exec_agent import exec_agent

    directory = exec_agent(tmp_path)
    tools = directory / "config" / "tools.toml"
    tools.write_text("read = true\n" + tools.read_text())  # the button opens the file through read
    agent = cireil.load(directory)
    result = agent.call("exec", command="python3", args=["-c", "for i in range(10000): print('line', i)"])
    assert "stdoutPath" in result.data
    view = ResultView(result)
    [button] = [b for b in view.buttons.children if b.description == "open stdout"]
    button.click()
    _wait(lambda: len(view.below.children) == 1)
    assert view.output.outputs[0]["data"]["text/plain"].startswith("$ python3 -c")  # the exec panel stays
    fold = view.below.children[0]
    assert fold.selected_index == 0 and result.data["stdoutPath"] in fold.get_title(0)
    assert "line 9999" in fold.children[0].outputs[0]["data"]["text/plain"]
    assert not button.disabled
    button.click()  # a second press unfolds the same output, it does not read the file again
    assert len(view.below.children) == 1
