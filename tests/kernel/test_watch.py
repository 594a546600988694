"""`%cireil watch` and `agent.watch()` in a real kernel: production turns recorded by the proxy (its own recorder
process, a scripted provider behind it) appear while they run, are updated in place as model calls come in,
and an interrupt ends the watch with one line."""

from __future__ import annotations

import json
import time

from attachkit import post_chat
from cireil.runtime.attach.proxy import ProxyServer
from cireil.runtime.attach.state import Upstream
from cireil.testing.scripted_llm import reply
from kernelharness import Kernel
from turnkit import turn_agent

SESSION = "discord:4242"


def body(messages: list[dict]) -> bytes:
    """A chat completions body shaped as the original's: system prompt, history, its metadata message last."""
    sent = [{"role": "system", "content": "prompt"}, *messages, {"role": "user", "content": "Current date: today"}]
    return json.dumps(
        {"messages": sent, "model": "m", "prompt_cache_key": SESSION, "stream": False}, separators=(",", ":")
    ).encode()


def first_call(text: str) -> bytes:
    return body([{"role": "user", "content": text}])


def second_call(text: str, call_id: str) -> bytes:
    call = {"id": call_id, "type": "function", "function": {"name": "read", "arguments": "{}"}}
    result = json.dumps({"name": "read", "success": True, "content": "Buy milk."})
    return body(
        [
            {"role": "user", "content": text},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": result},
        ]
    )


def test_watch_shows_a_production_turn_live_and_an_interrupt_ends_it(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_r")),
        reply.tool_calls(("respond", {"content": "milk"}, "call_done")),
        reply.tool_calls(("no-response", {}, "call_quiet")),
    )
    kernel = Kernel(cwd=tmp_path)
    upstream = {"default": Upstream("default", "openai", llm.base_url)}
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        with ProxyServer(agent, upstreams=upstream) as proxy:
            msg_id = kernel.submit("%cireil watch")
            kernel.wait_started(msg_id)
            time.sleep(1.0)  # the watch has taken its starting point (nothing before it is shown)
            assert post_chat(proxy.port, first_call("what do I buy?")) == 200
            first = kernel.wait_for_display(msg_id, "display_data", "production turn")
            text = first["content"]["data"]["text/plain"]
            assert f"· {SESSION} ·" in text and "1 model calls · running" in text and "“what do I buy?”" in text
            assert "step 1 · " in text
            display_id = first["content"]["transient"]["display_id"]

            assert post_chat(proxy.port, second_call("what do I buy?", "call_r")) == 200
            update = kernel.wait_for_display(msg_id, "update_display_data", "ended: respond")
            assert update["content"]["transient"]["display_id"] == display_id  # the same display, in place
            assert "2 model calls" in update["content"]["data"]["text/plain"]
            assert "recorded turn" in update["content"]["data"]["text/plain"]
            assert "model calls (2)" in update["content"]["data"]["text/html"]

            kernel.interrupt()
            run = kernel.collect(msg_id, timeout=30)
            assert run.status == "ok" and run.error is None
            assert run.stdout.strip().splitlines()[-1] == "watch stopped: 1 production turn(s) shown"
            assert len(run.of_type("display_data")) == 1  # one turn, one display

            # agent.watch() in Python: the turns as they change, here one that begins after the watch
            msg_id = kernel.submit(
                "seen = [(t.session_id, t.step_count, t.ended) for t in __import__('cireil').current_agent()"
                ".watch(timeout=8, poll=0.1)]\nseen"
            )
            kernel.wait_started(msg_id)
            time.sleep(1.0)
            assert post_chat(proxy.port, first_call("anything?")) == 200
            run = kernel.collect(msg_id, timeout=60)
            seen = __import__("ast").literal_eval(run.result["text/plain"])
            # the turn begins, gets its call and ends in three writes: a look between them shows it again
            assert seen[-1] == (SESSION, 1, "no-response") and {s[0] for s in seen} == {SESSION}
    finally:
        kernel.shutdown()
