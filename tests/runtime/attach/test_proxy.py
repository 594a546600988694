"""The recording proxy (runtime/attach/proxy.py, capture.py): forwards unchanged, streams token for token,
records turns, never stores a key, and forwards even when recording fails."""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cireil.runtime.attach.capture import Capture
from cireil.runtime.attach.listing import source_of, table
from cireil.runtime.attach.proxy import ProxyServer
from cireil.runtime.attach.state import Upstream
from cireil.runtime.recorder.model import load_turns
from cireil.runtime.recorder.store import RecordingStore
from cireil.testing.scripted_llm import ScriptedLLM, reply

KEY = "sk-proxy-test-key-0123456789"
SESSION = "internal:proxy"


def body(messages: list[dict], *, stream: bool = False, session: str = SESSION) -> bytes:
    """A chat completions body shaped as the original's: system prompt, history, its metadata message last."""
    sent = [{"role": "system", "content": "prompt"}, *messages, {"role": "user", "content": "Current date: today"}]
    return json.dumps(
        {"messages": sent, "model": "m", "prompt_cache_key": session, "stream": stream, "tool_choice": "required"},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()


def post(port: int, path: str, data: bytes, headers: dict | None = None) -> tuple[int, bytes, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(
        "POST", path, data, {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"} | (headers or {})
    )
    response = conn.getresponse()
    out = response.read()
    conn.close()
    return response.status, out, dict(response.getheaders())


def turns(agent_dir: Path) -> list:
    store = RecordingStore(agent_dir / "cireil-recordings.db")
    return load_turns(store)


def test_a_turn_goes_through_unchanged_and_is_recorded_whole(tmp_path):
    first = reply.tool_calls(("read", {"path": "/workspace/a.md"}, "call_1"))
    last = reply.tool_calls(("respond", {"content": "done"}, "call_2"))
    with ScriptedLLM(first, last) as llm, ScriptedLLM(first, last) as direct:
        upstream = {"default": Upstream("default", "openai", llm.base_url)}
        with ProxyServer(tmp_path, upstreams=upstream) as proxy:
            asked = body([{"role": "user", "content": "read it"}])
            status, via_proxy, _ = post(proxy.port, "/p/default/chat/completions", asked)
            _, straight, _ = post(direct.port, "/v1/chat/completions", asked)
            assert status == 200
            # the same reply as without the proxy, but for the server's own serial numbers and clock
            assert json.loads(via_proxy)["choices"] == json.loads(straight)["choices"]
            result = json.dumps({"name": "read", "success": True, "content": "A"})
            again = body(
                [
                    {"role": "user", "content": "read it"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                        ],
                    },
                    {"role": "tool", "tool_call_id": "call_1", "content": result},
                ],
                stream=True,
            )
            assert post(proxy.port, "/p/default/chat/completions", again)[0] == 200
            assert proxy.drain()
        assert llm.requests[0].headers["authorization"] == f"Bearer {KEY}"  # passed on as it came
        assert [r.body for r in llm.requests] == [json.loads(asked), json.loads(again)]
    (turn,) = turns(tmp_path)
    assert (turn.session_id, turn.ended, turn.text, turn.step_count) == (SESSION, "respond", "read it", 2)
    assert source_of(turn).startswith("production (")
    one, two = turn.steps
    assert one.request == json.loads(asked) and two.request == json.loads(again)
    assert one.reply["wire"] == {
        "sha256": __import__("hashlib").sha256(asked).hexdigest(),
        "bytes": len(asked),
        "exact": True,
    }
    assert one.tool_calls == [{"id": "call_1", "name": "read", "arguments": {"path": "/workspace/a.md"}}]
    assert one.calls[0].result == {"success": True, "content": "A"}  # from the next request, the name left out
    assert two.tool_calls[0]["name"] == "respond" and "notSent" in two.calls[0].result
    assert one.tokens_in and two.latency is not None
    assert KEY.encode() not in (tmp_path / "cireil-recordings.db").read_bytes()
    assert "production" in table([turn])


class _Dribble(BaseHTTPRequestHandler):
    """Sends one SSE event, then waits until the test has seen it through the proxy before sending the next."""

    protocol_version = "HTTP/1.1"
    seen: list[threading.Event]

    def log_message(self, *args) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, gate in enumerate(self.seen):
            piece = {"choices": [{"index": 0, "delta": {"content": f"tok{n} "}, "finish_reason": None}]}
            data = f"data: {json.dumps(piece)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if not gate.wait(10):
                return  # the proxy held the token back: the test fails on its side
        end = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(end), end))
        self.wfile.flush()


def test_a_stream_goes_through_token_for_token(tmp_path):
    gates = [threading.Event() for _ in range(4)]
    handler = type("Handler", (_Dribble,), {"seen": gates})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        upstream = {"default": Upstream("default", "openai", f"http://127.0.0.1:{server.server_address[1]}/v1")}
        with ProxyServer(tmp_path, upstreams=upstream) as proxy:
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
            conn.request("POST", "/p/default/chat/completions", body([{"role": "user", "content": "hi"}], stream=True))
            response = conn.getresponse()
            got, buffer = [], b""
            for gate in gates:
                # each token arrives while the provider still waits: nothing is buffered on the way
                while b"\n\n" not in buffer:
                    buffer += response.read1(65536)
                event, buffer = buffer.split(b"\n\n", 1)
                got.append(json.loads(event[6:])["choices"][0]["delta"]["content"])
                gate.set()
            response.read()
            conn.close()
            assert proxy.drain()
    finally:
        server.shutdown()
        server.server_close()
    assert got == ["tok0 ", "tok1 ", "tok2 ", "tok3 "]
    (turn,) = turns(tmp_path)
    assert turn.steps[0].reply["content"] == "tok0 tok1 tok2 tok3 "
    assert turn.steps[0].ttft is not None and turn.steps[0].ttft <= turn.steps[0].latency


@pytest.mark.parametrize("kind", ["anthropic", "openai-codex"])
def test_anthropic_and_codex_streams_are_recorded(tmp_path, kind):
    answer = reply.tool_calls(("no-response", {}, "call_9"), reasoning="quiet")
    with ScriptedLLM(answer) as llm:
        login = llm.codex.login()  # the scripted Codex backend wants a token it issued
        with ProxyServer(tmp_path, upstreams={"p": Upstream("p", kind, llm.base_url)}) as proxy:
            if kind == "anthropic":
                sent = {
                    "max_tokens": 64000,
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "ping"}]}],
                    "model": "m",
                    "system": [
                        {
                            "text": "x\nThe current session is on the platform: tui\nThis is a TUI session",
                            "type": "text",
                        }
                    ],
                    "stream": True,
                }
                path, headers = "/p/p/messages", {}
            else:
                sent = {
                    "input": [{"content": [{"text": "ping", "type": "input_text"}], "role": "user", "type": "message"}],
                    "instructions": "x",
                    "model": "m",
                    "prompt_cache_key": "discord:42",
                    "stream": True,
                }
                path, headers = "/p/p/codex/responses", {"Authorization": f"Bearer {login['accessToken']}"}
            status, _, _ = post(proxy.port, path, json.dumps(sent).encode(), headers)
            assert status == 200
            assert proxy.drain()
    (turn,) = turns(tmp_path)
    assert turn.session_id == ("tui" if kind == "anthropic" else "discord:42")
    assert turn.ended == "no-response"
    step = turn.steps[0]
    assert step.tool_calls == [{"id": "call_9", "name": "no-response", "arguments": {}}]
    assert step.reply["reasoning"] == "quiet" and step.request == sent


def test_recording_that_fails_never_fails_the_forward(tmp_path, capsys):
    class Broken(Capture):
        def record(self, store, exchange):
            raise RuntimeError("disk on fire")

    with ScriptedLLM(reply.tool_calls(("no-response", {}))) as llm, ScriptedLLM() as other:
        capture = Broken(tmp_path)
        upstream = {"default": Upstream("default", "openai", llm.base_url)}
        with ProxyServer(tmp_path, upstreams=upstream, capture=capture) as proxy:
            status, data, _ = post(proxy.port, "/p/default/chat/completions", body([{"role": "user", "content": "x"}]))
            assert status == 200 and json.loads(data)["choices"][0]["message"]["tool_calls"]
            assert proxy.drain()
            assert capture.failures == 1
        # a store that cannot even be opened: forwarding only, said once
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad" / "cireil-recordings.db").write_text("not sqlite at all, not at all" * 100)
        upstream = {"default": Upstream("default", "openai", other.base_url)}
        with ProxyServer(tmp_path / "bad", upstreams=upstream) as proxy:
            status, _, _ = post(proxy.port, "/p/default/chat/completions", body([{"role": "user", "content": "x"}]))
            assert status == 200
            deadline = time.monotonic() + 20  # the recorder process says it when it has started
            while proxy.capture.problem is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert "recording is off" in (proxy.capture.problem or "")
    err = capsys.readouterr().err
    assert "disk on fire" in err and "recording is off" in err and "forwarding only" in err


def test_an_unknown_provider_or_an_unreachable_one_is_said_by_the_proxy(tmp_path):
    upstream = {"default": Upstream("default", "openai", "http://127.0.0.1:9/v1")}
    with ProxyServer(tmp_path, upstreams=upstream) as proxy:
        status, data, _ = post(proxy.port, "/p/nope/chat/completions", b"{}")
        assert status == 404 and b"no provider" in data
        status, data, _ = post(proxy.port, "/p/default/chat/completions", body([{"role": "user", "content": "x"}]))
        assert status == 502 and b"cannot reach" in data
        assert proxy.drain()
    (turn,) = turns(tmp_path)
    assert turn.steps[0].retried  # recorded as a failed model call
