"""The proxy's recorder process (runtime/attach/recording.py): exchanges framed over its stdin unchanged, and a
recorder that dies costs the exchanges it held, never a forward: it is said, and a new one records the next."""

from __future__ import annotations

import http.client
import io
import json
import time

from attachkit import post_chat
from cireil.runtime.attach.capture import Exchange
from cireil.runtime.attach.proxy import ProxyServer
from cireil.runtime.attach.recording import RecordingProcess, decode, encode
from cireil.runtime.attach.state import Upstream
from cireil.runtime.recorder.model import load_turns
from cireil.runtime.recorder.store import RecordingStore
from cireil.testing.scripted_llm import ScriptedLLM, reply


def body(text: str, session: str) -> bytes:
    sent = [{"role": "system", "content": "prompt"}, {"role": "user", "content": text}]
    return json.dumps({"messages": sent, "model": "m", "prompt_cache_key": session}).encode()


def test_a_frame_carries_the_exchange_byte_for_byte():
    sent = Exchange(
        "p", "openai", "POST", "/chat/completions", {"session_id": "s"}, b'{"a":"\xc3\xa9"}\x00', 200,
        "application/json", b"\xff\xfe reply", 1.5, None, 0.25, "cut short",
    )  # fmt: skip
    stream = io.BytesIO(encode(sent) + encode(sent)[:10])
    assert decode(stream) == sent
    assert decode(stream) is None  # a frame cut short (the proxy went away mid-write) ends the input


def test_a_recorder_that_dies_is_said_and_replaced_and_forwarding_goes_on(tmp_path):
    log = io.StringIO()
    answer = reply.tool_calls(("no-response", {}))
    with ScriptedLLM(default=answer) as llm:
        upstream = {"default": Upstream("default", "openai", llm.base_url)}
        capture = RecordingProcess(tmp_path, log=log)
        with ProxyServer(tmp_path, upstreams=upstream, capture=capture) as proxy:
            assert post_chat(proxy.port, body("one", "internal:a")) == 200
            deadline = time.monotonic() + 20
            while capture.recorded < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert capture.recorded == 1
            first = capture._child
            assert first is not None
            first.proc.kill()
            first.proc.wait()
            # the next forward is the original's as ever; the exchange the dead recorder would have had is lost
            assert post_chat(proxy.port, body("two", "internal:b")) == 200
            deadline = time.monotonic() + 20
            while capture.restarts < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert post_chat(proxy.port, body("three", "internal:c")) == 200
            deadline = time.monotonic() + 20
            while capture.recorded < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert proxy.drain()
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            conn.request("GET", "/cireil/status")
            status = json.loads(conn.getresponse().read())
            conn.close()
            assert capture._child is not first
    assert (capture.restarts, capture.recorded, capture.dropped) == (1, 2, 1)
    assert status["forwarded"] == 3 and status["recorded"] == 2 and status["dropped"] == 1
    assert "the recorder process ended (exit -9): started again" in log.getvalue()
    store = RecordingStore(tmp_path / "cireil-recordings.db")
    assert sorted(t.text for t in load_turns(store)) == ["one", "three"]
