"""The scripted OpenAI-compatible server itself: wire format (JSON and SSE), script order, defaults, recording."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from cireil.testing.scripted_llm import ScriptedLLM, reply

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": []}


def post(llm: ScriptedLLM, body: dict | None = None, **headers: str) -> httpx.Response:
    return httpx.post(f"{llm.base_url}/chat/completions", json=body or BODY, headers=headers, timeout=30)


def events(response: httpx.Response) -> list:
    assert response.headers["content-type"] == "text/event-stream"
    lines = [line for line in response.text.split("\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_json_reply_shape(llm):
    llm.script(reply.tool_calls(("read", {"path": "/x"}), reasoning="why", text="also text"))
    response = post(llm, Authorization="Bearer k")
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion"
    assert data["model"] == "m"
    (choice,) = data["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {
        "role": "assistant",
        "content": "also text",
        "reasoning_content": "why",
        "tool_calls": [
            {"id": "call_scripted_0", "type": "function", "function": {"name": "read", "arguments": '{"path": "/x"}'}}
        ],
    }
    usage = data["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    (seen,) = llm.requests
    assert seen.body == BODY
    assert seen.headers["authorization"] == "Bearer k"
    assert seen.path == "/v1/chat/completions"


def test_stream_is_chunked_like_openai(llm):
    args = {"content": "a reply long enough to be split into several pieces"}
    llm.script(reply.tool_calls(("respond", args), ("read", {"path": "/p"}, None)))
    chunks = events(post(llm, {**BODY, "stream": True, "stream_options": {"include_usage": True}}))
    assert chunks[-1] == "[DONE]"
    usage_chunk, finish_chunk, *_ = reversed(chunks[:-1])
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["prompt_tokens"] > 0
    assert finish_chunk["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks[:-1])
    deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[1:-3]]
    heads = [d for d in deltas if "name" in d.get("function", {})]
    assert heads == [
        {"index": 0, "type": "function", "function": {"name": "respond", "arguments": ""}, "id": "call_scripted_0"},
        {"index": 1, "type": "function", "function": {"name": "read", "arguments": ""}},  # no id when scripted so
    ]
    pieces = [d["function"]["arguments"] for d in deltas if d["index"] == 0 and "name" not in d["function"]]
    assert len(pieces) > 5 and max(len(p) for p in pieces) <= 7
    assert "".join(pieces) == json.dumps(args)


def test_stream_without_usage_option_has_no_usage_chunk(llm):
    llm.script(reply.text("plain words", reasoning="r"))
    chunks = events(post(llm, {**BODY, "stream": True}))
    assert all(c == "[DONE]" or c["choices"] for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1])
    thinking = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks[:-1])
    assert (text, thinking) == ("plain words", "r")
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_json_only_ignores_stream_request(llm):
    llm.script(reply.text("x", json_only=True))
    response = post(llm, {**BODY, "stream": True})
    assert response.headers["content-type"] == "application/json"
    assert response.json()["choices"][0]["finish_reason"] == "stop"


def test_error_reply(llm):
    llm.script(reply.error(429, "too many"))
    response = post(llm)
    assert response.status_code == 429
    assert response.json()["error"]["message"] == "too many"


def test_content_filter(llm):
    llm.script(reply.content_filter())
    choice = post(llm).json()["choices"][0]
    assert choice["finish_reason"] == "content_filter"
    assert choice["message"]["content"] is None


def test_script_order_then_default(llm):
    llm.script(reply.text("one"), reply.text("two"))
    assert llm.pending == 2
    texts = [post(llm).json()["choices"][0]["message"] for _ in range(3)]
    assert [t["content"] for t in texts[:2]] == ["one", "two"]
    assert json.loads(texts[2]["tool_calls"][0]["function"]["arguments"]) == {"content": "(script exhausted)"}
    assert llm.pending == 0
    assert len(llm.requests) == 3


def test_callable_default_sees_the_request():
    def echo(body: dict):
        last = body["messages"][-1]["content"]
        return reply.tool_calls(("respond", {"content": f"you said: {last}"}))

    with ScriptedLLM(default=echo) as llm:
        body = {**BODY, "messages": [{"role": "user", "content": "ping"}]}
        message = post(llm, body).json()["choices"][0]["message"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"content": "you said: ping"}


def test_replies_given_at_construction_and_usage_grows():
    with ScriptedLLM(reply.text("a"), reply.text("a")) as llm:
        small = post(llm).json()["usage"]["prompt_tokens"]
        large = post(llm, {**BODY, "messages": [{"role": "user", "content": "hi " * 500}]}).json()["usage"]
    assert large["prompt_tokens"] > small


def test_unknown_path_and_bad_json(llm):
    assert httpx.post(f"{llm.base_url}/embeddings", json={}).status_code == 404
    response = httpx.post(f"{llm.base_url}/chat/completions", content=b"{nope")
    assert response.status_code == 400
    assert llm.requests == []


def test_stop_closes_the_port():
    llm = ScriptedLLM().start()
    url = llm.base_url
    assert post(llm).status_code == 200
    llm.stop()
    llm.stop()  # idempotent
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{url}/chat/completions", json=BODY, timeout=5)
    with pytest.raises(RuntimeError, match="not running"):
        _ = llm.base_url


def test_stop_ends_a_delayed_reply():
    llm = ScriptedLLM(reply.text("late", delay=600)).start()
    with httpx.Client(timeout=60) as client:
        done: list = []

        def call():
            try:
                done.append(client.post(f"{llm.base_url}/chat/completions", json=BODY))
            except httpx.HTTPError as exc:
                done.append(exc)

        worker = threading.Thread(target=call)
        worker.start()
        while not llm.requests:
            worker.join(0.01)
        llm.stop()
        worker.join(60)
    assert not worker.is_alive()
    assert isinstance(done[0], httpx.HTTPError)  # the connection closed without a reply


def test_broken_default_is_a_server_error():
    with ScriptedLLM(default=lambda body: body["missing"]) as llm:
        response = post(llm)
        assert response.status_code == 500
        assert response.json()["error"]["message"] == "the scripted default raised KeyError('missing')"
        llm.default = lambda body: "text"
        response = post(llm)
        assert response.json()["error"]["message"] == "the scripted default returned 'text', not a reply"
        llm.default = reply.text("fine")
        assert post(llm).json()["choices"][0]["message"]["content"] == "fine"
