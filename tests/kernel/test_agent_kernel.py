"""Agent turns in a real kernel: %%cireil_agent renders live, %cireil prompt / session / sessions,
the conversation after a kernel restart, and an interrupt in the middle of a turn."""

from __future__ import annotations

import re
import time

from cireil.testing.scripted_llm import reply
from kernelharness import Kernel
from turnkit import turn_agent

RESULT = "application/vnd.cireil.result+json"


def html_of(run) -> str:
    return "\n".join(b.get("text/html", "") for b in run.bundles)


def test_a_turn_renders_live_and_the_conversation_survives_a_kernel_restart(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "You need **milk**. <script>alert(1)</script>"})),
    )
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        run = kernel.run("%%cireil_agent\nWhat do I need to buy?")
        text = run.text()
        assert "you: What do I need to buy?" in text
        assert "→ read" in text
        assert "Buy milk." in text  # the read result, drawn by read's own view
        assert "testagent: You need **milk**." in text
        html = html_of(run)
        assert "<strong>milk</strong>" in html
        assert "<script>" not in html and "&lt;script&gt;" in html  # a model's raw HTML is shown, never run
        assert "turn ended with a final respond" in text and "tokens by cireil's estimate" in text
        assert "by the provider's count" in text
        read_results = [b for b in run.bundles if RESULT in b and "content" in b[RESULT]]
        assert read_results and "Buy milk." in read_results[0][RESULT]["content"]

        run = kernel.run("%cireil sessions")
        assert "notebook:main" in run.text() and "4 messages" not in run.text()
    finally:
        kernel.shutdown()

    kernel = Kernel(cwd=tmp_path)  # a new kernel: only sessions.db remembers
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        run = kernel.run("%cireil session")
        assert "session: notebook:main" in run.text()
        assert "messages: 5" in run.text()  # user, assistant+read result, assistant+respond result
        run = kernel.run("%cireil prompt")
        text = run.text()
        assert "What do I need to buy?" in text
        assert "tools: respond, no-response, read" in text
        assert "<details" in html_of(run)
        llm.script(reply.tool_calls(("respond", {"content": "Still milk."})))
        kernel.run("%%cireil_agent\nAnd again?")
        assert "What do I need to buy?" in str(llm.requests[-1].body["messages"])
    finally:
        kernel.shutdown()


def test_sessions_switch_by_name(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        llm.script(reply.tool_calls(("respond", {"content": "one"})), reply.tool_calls(("respond", {"content": "two"})))
        kernel.run("%%cireil_agent --session research\nfirst question")
        assert llm.requests[-1].body["prompt_cache_key"] == "notebook:research"
        run = kernel.run("%cireil session")
        assert "session: notebook:research" in run.text()
        kernel.run("%cireil session main")
        kernel.run("%%cireil_agent\nsecond question")
        assert llm.requests[-1].body["prompt_cache_key"] == "notebook:main"
        run = kernel.run("%cireil sessions")
        assert "notebook:research" in run.text() and "* notebook:main" in run.text()
        run = kernel.run("%%cireil_agent --bogus\nx", ok=False)
        assert run.stderr.startswith("UsageError: unknown option '--bogus'")
    finally:
        kernel.shutdown()


def test_attachments_reach_download_attachments(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    photo = tmp_path / "receipt.txt"
    photo.write_text("milk 1.20\n")
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        kernel.run("import cireil\nfirst = cireil.current_agent()\n")
        llm.default = lambda body: reply.tool_calls(("respond", {"content": "saved"}))
        script_first = reply.tool_calls(("session-info", {}))
        llm.script(script_first)
        run = kernel.run(f"%%cireil_agent --attach {photo}\nHere is my receipt")
        assert "📎 receipt.txt" in run.text() or "attached: receipt.txt" in run.text()
        message_id = kernel.run("first.session.history[0]['id']").result["text/plain"].strip("'")
        llm.script(reply.tool_calls(("download-attachments", {"message_id": message_id, "to": "/workspace/in"})))
        kernel.run("%%cireil_agent\nsave it")
        saved = agent / "workspace" / "in" / f"{message_id}-receipt.txt"
        assert saved.read_text() == "milk 1.20\n"
    finally:
        kernel.shutdown()


def test_an_interrupt_stops_the_turn_and_the_kernel_stays_usable(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("write", {"path": "/workspace/one.txt", "content": "1"})),
        reply.tool_calls(("respond", {"content": "never"}), delay=60),
    )
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        msg_id = kernel.submit("%%cireil_agent\nwrite one")
        deadline = time.monotonic() + 20
        while len(llm.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        kernel.interrupt()
        run = kernel.collect(msg_id, timeout=30)
        # one line, no frames of cireil's internals; the turn's output says how it ended
        assert run.error["ename"] == "KeyboardInterrupt" and len(run.error["traceback"]) == 1
        assert run.error["traceback"][0].startswith("KeyboardInterrupt: agent turn interrupted after")
        assert "turn interrupted after" in "\n".join(b.get("text/plain", "") for b in run.bundles)
        run = kernel.run("[m['role'] for m in __import__('cireil').current_agent().session.history]")
        assert run.result["text/plain"] == "[]"  # no half turn is kept (as the original); its file stays written
        assert (agent / "workspace" / "one.txt").read_text() == "1"
        llm.script(reply.tool_calls(("respond", {"content": "back"})))
        run = kernel.run("%%cireil_agent\nare you there?")
        assert "testagent: back" in run.text()
    finally:
        kernel.shutdown()


def test_a_job_that_fires_between_cells_is_announced_by_the_next_cireil_command(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        kernel.run(
            "from datetime import datetime, timedelta, timezone\n"
            "at = (datetime.now(timezone.utc) + timedelta(seconds=1)).isoformat()"
        )
        at = kernel.run("at").result["text/plain"].strip("'")
        llm.script(
            reply.tool_calls(("schedule", {"id": "tea", "at": at, "prompt": "tea time"})),
            reply.tool_calls(("respond", {"content": "scheduled"})),
            reply.tool_calls(("respond", {"content": "Time for tea!"})),
        )
        kernel.run("%%cireil_agent\nremind me")
        deadline = time.monotonic() + 20
        while len(llm.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the announcement is committed right after the job's turn
        run = kernel.run("%cireil session")
        assert "testagent (job tea) → notebook:main: Time for tea!" in run.text()
        run = kernel.run("%cireil session")
        assert "Time for tea!" not in run.text()  # shown once
    finally:
        kernel.shutdown()


def test_chat_bubbles_show_attachments_and_escape_markup():
    from cireil.render import chat

    text, html = chat.agent_bubble(
        "**bold** <img src=x onerror=alert(1)>", agent="wren", attachments=[("/workspace/a.txt", None)]
    )
    assert "<strong>bold</strong>" in html and "<img src=x" not in html and "&lt;img" in html
    assert "📎 /workspace/a.txt" in html and "attached: /workspace/a.txt" in text


def test_respond_schedule_invoke_and_no_response_have_their_own_views(tmp_path, llm):
    import cireil
    from cireil.render import result_bundle

    agent = cireil.load(turn_agent(tmp_path, llm.base_url))
    try:
        text = result_bundle(agent.call("respond", content="**hi**"))["text/plain"]
        assert text.startswith("testagent: **hi**") and "sent; a final message" in text
        at = "2999-01-01T00:00:00+00:00"
        bundle = result_bundle(agent.call("schedule", id="later", at=at, prompt="check the beds"))
        assert bundle["text/plain"].startswith(f"⏰ job later at {at}: check the beds")
        assert "announced to current" in bundle["text/plain"]
        assert "turn ends without a message" in result_bundle(agent.call("no-response"))["text/plain"]
        agent.session_for("notebook:other")
        agent.store.commit(agent.session_for("notebook:other"), [])
        queued = result_bundle(agent.call("invoke", session="notebook:other", prompt="go"))
        assert queued["text/plain"] == "queued a turn in notebook:other: go"
    finally:
        agent.close()


def test_the_turn_footer_and_prompt_show_one_estimate_beside_the_providers_count(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(reply.tool_calls(("respond", {"content": "hello"})))
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        prompt = kernel.run("%cireil prompt").text()
        estimate = re.search(r"~([\d,]+) tokens \(cireil's estimate", prompt).group(1)
        text = kernel.run("%%cireil_agent\nhi").text()
        # a one-call turn: its request is the one %cireil prompt showed plus the message, counted the same way
        from cireil.runtime.engine.history import estimate_tokens
        from cireil.runtime.sessions import messages

        expected = int(estimate.replace(",", "")) + estimate_tokens([messages.user_message("hi")])
        # each count on the line of what it counts, saying what it includes (issue 34: the two differ 4-fold)
        assert (
            f"last request: ~{expected:,} tokens by cireil's estimate (system prompt and messages, no tool definitions)"
            " · " in text
        )
        sent = llm.requests[-1].body
        counted = re.search(r"([\d,]+) prompt tokens by the provider's count \(all it was sent\)", text).group(1)
        assert int(counted.replace(",", "")) > 0 and sent["messages"]
        assert "\nturn total: " in text and "over 1 model call, by the provider's count" in text
    finally:
        kernel.shutdown()
