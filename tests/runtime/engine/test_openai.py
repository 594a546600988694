"""The OpenAI-compatible provider against the scripted server on loopback: request shape, streaming,
reply parsing, the retry rules of reference §8.4 (tool_choice, 429 key rotation, streaming refused)
and cancellation."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading

import httpx
import pytest

from cireil.runtime.config.engine_config import ENGINE_FILE, KeySource, ModelConfig, ProviderConfig, parse_engine_config
from cireil.runtime.config.tomlsource import TomlSource
from cireil.runtime.engine.openai import (
    TOOL_USE_REMINDER,
    ContentFiltered,
    ModelRequest,
    NoToolCalls,
    OpenAIProvider,
    ProviderError,
    build_request_body,
    parse_arguments,
)
from cireil.runtime.sessions import messages as M
from cireil.testing.scripted_llm import ScriptedLLM, reply

TOOLS = [
    {
        "name": "respond",
        "description": "Say something to the user.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
    },
    {"name": "read", "description": "Read a file.", "parameters": {"type": "object", "properties": {}}},
]


def config(llm: ScriptedLLM, **kw) -> ProviderConfig:
    return ProviderConfig("local", api_base=llm.base_url, default_model="test-model", **kw)


def request(model: str = "test-model", messages: list | None = None, **kw) -> ModelRequest:
    history = [M.user_message("hello")] if messages is None else messages
    return ModelRequest("You are a test.", history, TOOLS, "session-1", model, **kw)


def complete(cfg: ProviderConfig, req: ModelRequest | None = None, **kw):
    async def main():
        provider = OpenAIProvider(cfg, cfg.default_model)
        try:
            return await provider.complete(req or request(), **kw)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def complete_many(provider: OpenAIProvider, *requests: ModelRequest) -> list:
    """Several calls on one provider instance (what it remembers carries over); exceptions are returned."""

    async def main():
        results = []
        try:
            for req in requests:
                try:
                    results.append(await provider.complete(req))
                except ProviderError as exc:
                    results.append(exc)
        finally:
            await provider.aclose()
        return results

    return asyncio.run(main())


def calls(result) -> list[tuple[str, dict]]:
    return [(p["name"], p["input"]) for p in M.tool_calls(result.message)]


# -- request shape ----------------------------------------------------------------------------
def full_history() -> list[dict]:
    image = {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="}
    video = {"type": "video", "mediaType": "video/mp4", "data": "AAAAIGZ0eXA="}
    call = {"type": "toolCall", "id": "call_1", "name": "read", "input": {"path": "/workspace/é.md"}}
    call2 = {"type": "toolCall", "id": "call_2", "name": "read", "input": {}, "rawArguments": "{broken"}
    return [
        M.user_message("look at this", parts=[image, video]),
        M.assistant_message(
            [
                {"type": "thinking", "thinking": "first thought"},
                {"type": "redactedThinking"},
                {"type": "thinking", "thinking": "second thought"},
                {"type": "text", "text": "stray words"},
                call,
                call2,
            ]
        ),
        M.tool_response("call_1", "read", {"success": True, "content": "héllo"}),
        M.tool_response("call_2", "read", ["not", "an", "object"]),
        M.system_message("Tool read failed 3 times in a row."),
        M.assistant_message([{"type": "thinking", "thinking": "only thinking"}]),
        M.user_message("Current date: now"),
    ]


EXPECTED_MESSAGES = [
    {"role": "system", "content": "You are a test."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "look at this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAAIGZ0eXA="}, "fps": 10},
        ],
    },
    {
        "role": "assistant",
        "reasoning_content": "first thought\n\nsecond thought",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"/workspace/é.md"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        ],
        "content": [{"type": "text", "text": "stray words"}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"name":"read","success":true,"content":"héllo"}'},
    {"role": "tool", "tool_call_id": "call_2", "content": '{"name":"read","output":["not","an","object"]}'},
    {"role": "system", "content": "Tool read failed 3 times in a row."},
    {"role": "assistant", "reasoning_content": "only thinking", "content": ""},
    {"role": "user", "content": [{"type": "text", "text": "Current date: now"}]},
]


@pytest.mark.parametrize("stream", [True, False])
def test_request_shape(llm, stream):
    llm.script(reply.tool_calls(("respond", {"content": "hi"})))
    cfg = config(llm, api_keys=[KeySource("sk-test")], custom_headers={"X-Foo": "bar", "X-OpenRouter-Title": "Mine"})
    provider = OpenAIProvider(cfg, "test-model")
    provider._stream = stream  # what a backend refusing streams leaves behind
    (result,) = complete_many(provider, request(messages=full_history()))
    (seen,) = llm.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.headers["http-referer"] == "https://github.com/CutieZone/CireilClaw"
    assert seen.headers["x-openrouter-title"] == "Mine"  # customHeaders come last and win
    assert seen.headers["x-openrouter-categories"] == "personal-agent,cli-agent"
    assert seen.headers["x-foo"] == "bar"
    assert seen.headers["content-type"] == "application/json"
    assert [name for name, _ in seen.header_lines].count("x-openrouter-title") == 1  # replaced, not added
    expected = {
        "messages": EXPECTED_MESSAGES,
        "model": "test-model",
        "prompt_cache_key": "session-1",
        "tool_choice": "required",
        "tools": [
            {
                "type": "function",
                "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
            }
            for t in TOOLS
        ],
        "reasoning": {"enabled": True},
    }
    if stream:
        expected |= {"stream": True, "stream_options": {"include_usage": True}}
    assert seen.body == expected
    assert list(seen.body) == list(expected)  # the documented key order, as %cireil prompt shows it
    assert result.request_body == seen.body
    assert build_request_body(cfg, ModelConfig(), request(messages=full_history()), stream=stream) == seen.body


@pytest.mark.parametrize(
    ("reasoning", "expected"),
    [(True, {"enabled": True}), ("high", {"effort": "high"}), ("none", {"effort": "none"}), (False, None)],
)
def test_reasoning_variants(llm, reasoning, expected):
    llm.script(reply.tool_calls(("respond", {"content": "hi"})))
    cfg = config(llm, models={"test-model": ModelConfig(reasoning=reasoning)})
    complete(cfg)
    assert llm.requests[0].body.get("reasoning") == expected
    assert ("reasoning" in llm.requests[0].body) == (expected is not None)


def test_model_of_the_request_is_sent_with_its_config(llm):
    llm.script(reply.tool_calls(("respond", {"content": "hi"})))
    cfg = config(llm, models={"other": ModelConfig(reasoning="low")})
    result = complete(cfg, request(model="other"))
    assert llm.requests[0].body["model"] == "other"
    assert llm.requests[0].body["reasoning"] == {"effort": "low"}
    assert result.request_body["model"] == "other"


@pytest.mark.parametrize(
    ("model", "auto_flag", "auto"),
    [
        ("test-model", False, False),
        ("test-model", True, True),
        ("moonshot/Kimi-K2.5", False, True),
        ("kimi-for-code", False, True),
        ("kimi-k2", False, False),
        ("other-2.5", False, False),
    ],
)
def test_tool_choice_auto_rules(model, auto_flag, auto):
    cfg = ProviderConfig("p", api_base="http://127.0.0.1:1/v1", default_model=model, use_tool_choice_auto=auto_flag)
    body = build_request_body(cfg, ModelConfig(), request(model=model), stream=False)
    assert body["tool_choice"] == ("auto" if auto else "required")
    last = body["messages"][-1]
    assert (last == {"role": "system", "content": TOOL_USE_REMINDER}) == auto
    assert "stream" not in body


def test_no_tools_sends_no_tool_choice():
    cfg = ProviderConfig("p", api_base="http://127.0.0.1:1/v1", default_model="m", use_tool_choice_auto=True)
    body = build_request_body(cfg, ModelConfig(reasoning=False), ModelRequest("s", [], [], "sid", "m"), stream=False)
    assert body == {"messages": [{"role": "system", "content": "s"}], "model": "m", "prompt_cache_key": "sid"}


# -- replies ----------------------------------------------------------------------------------
@pytest.mark.parametrize("json_only", [False, True])
def test_tool_calls_reasoning_and_usage(llm, json_only):
    llm.script(
        reply.tool_calls(
            ("read", {"path": "/workspace/x"}),
            ("respond", {"content": 'Done: "ok" ✓'}),
            reasoning="Read first, then answer.",
            json_only=json_only,  # a server answering a stream request with plain JSON
        )
    )
    result = complete(config(llm))
    assert result.finish_reason == "tool_calls"
    assert result.message["role"] == "assistant"
    assert result.message["content"][0] == {"type": "thinking", "thinking": "Read first, then answer."}
    assert calls(result) == [("read", {"path": "/workspace/x"}), ("respond", {"content": 'Done: "ok" ✓'})]
    assert [p["id"] for p in M.tool_calls(result.message)] == ["call_scripted_0", "call_scripted_1"]
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0
    assert result.usage["total_tokens"] == result.usage["prompt_tokens"] + result.usage["completion_tokens"]
    assert llm.requests[0].body["stream"] is True


def test_usage_follows_the_request_size(llm):
    llm.script(reply.tool_calls(("respond", {"content": "a"})), reply.tool_calls(("respond", {"content": "a"})))
    small = complete(config(llm), request(messages=[M.user_message("hi")]))
    large = complete(config(llm), request(messages=[M.user_message("hi " * 2000)]))
    assert large.usage["prompt_tokens"] > small.usage["prompt_tokens"]


def test_on_delta_events_in_order(llm):
    args = {"content": "Hello there, this is a longer answer."}
    llm.script(reply.tool_calls(("respond", args), ("read", {"path": "/p"}), reasoning="thinking hard", text="oops"))
    events: list[dict] = []
    result = complete(config(llm), on_delta=events.append)
    kinds = [e["type"] for e in events]
    # thinking, then text, then the calls one after another (the order the server streamed them)
    assert kinds == sorted(kinds, key=["thinking", "text", "toolCall"].index)
    assert "".join(e["text"] for e in events if e["type"] == "thinking") == "thinking hard"
    assert "".join(e["text"] for e in events if e["type"] == "text") == "oops"
    assert sum(1 for e in events if e["type"] == "thinking") > 1  # streamed in pieces, not at once
    first = [e for e in events if e["type"] == "toolCall" and e["index"] == 0]
    second = [e for e in events if e["type"] == "toolCall" and e["index"] == 1]
    assert events.index(first[-1]) < events.index(second[0])
    assert len(first) > 3
    assert all(e["id"] == "call_scripted_0" and e["name"] == "respond" for e in first)
    growing = [e["arguments"] for e in first]
    assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(growing))
    assert growing[-1] == json.dumps(args)
    assert second[-1]["arguments"] == json.dumps({"path": "/p"})
    assert calls(result)[0] == ("respond", args)  # the stray text is not part of the message
    assert not any(p["type"] == "text" for p in result.message["content"])


def test_on_delta_for_a_json_answer(llm):
    llm.script(reply.tool_calls(("respond", {"content": "x"}), reasoning="why", json_only=True))
    events: list[dict] = []
    complete(config(llm), on_delta=events.append)
    assert events == [
        {"type": "thinking", "text": "why"},
        {"type": "toolCall", "index": 0, "id": "call_scripted_0", "name": "respond", "arguments": '{"content": "x"}'},
    ]


@pytest.mark.parametrize("json_only", [False, True])
def test_argument_repair_and_raw_arguments(llm, json_only):
    llm.script(
        reply.tool_calls(
            ("exec", r'{"command": "grep -E \d+\.txt", "path": "C:\\dir"}'),  # \d and \. are invalid escapes
            ("read", ""),
            ("read", "   "),
            ("write", '{"path": "/x", "content": "unterminated'),
            ("edit", "[1, 2]"),
            ("exec", r'{"re": "\\d"}'),  # a valid escaped backslash stays one backslash
            json_only=json_only,
        )
    )
    parts = M.tool_calls(complete(config(llm)).message)
    assert [(p["name"], p["input"]) for p in parts] == [
        ("exec", {"command": r"grep -E \d+\.txt", "path": "C:\\dir"}),
        ("read", {}),
        ("read", {}),
        ("write", {}),
        ("edit", {}),
        ("exec", {"re": "\\d"}),
    ]
    assert [p.get("rawArguments") for p in parts] == [
        None,
        None,
        None,
        '{"path": "/x", "content": "unterminated',
        "[1, 2]",
        None,
    ]


def test_parse_arguments_directly():
    assert parse_arguments(None) == ({}, None)
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments(r'{"p": "a\qb\u00e9"}') == ({"p": "a\\qbé"}, None)
    assert parse_arguments('"text"') == ({}, '"text"')


@pytest.mark.parametrize("json_only", [False, True])
def test_missing_call_ids_are_made_up(llm, json_only):
    llm.script(reply.tool_calls(("read", {"path": "/a"}, None), ("read", {"path": "/b"}, "srv-7"), json_only=json_only))
    parts = M.tool_calls(complete(config(llm)).message)
    assert parts[0]["id"].startswith("call_") and len(parts[0]["id"]) > len("call_")
    assert parts[1]["id"] == "srv-7"


@pytest.mark.parametrize("json_only", [False, True])
def test_no_tool_calls_keeps_stray_text(llm, json_only):
    llm.script(reply.text("I would read the file.", reasoning="hmm", json_only=json_only))
    with pytest.raises(NoToolCalls) as info:
        complete(config(llm))
    exc = info.value
    assert isinstance(exc, ProviderError)
    assert exc.text == "I would read the file."
    assert exc.thinking == "hmm"
    assert exc.finish_reason == "stop"
    assert "without calling a tool (finish_reason stop)" in str(exc)
    assert exc.request_body == llm.requests[0].body
    assert exc.usage["total_tokens"] > 0


@pytest.mark.parametrize("json_only", [False, True])
def test_content_filter_is_its_own_error(llm, json_only):
    llm.script(reply.content_filter("partial", json_only=json_only))
    with pytest.raises(ContentFiltered) as info:
        complete(config(llm))
    assert not isinstance(info.value, NoToolCalls)
    assert "content filter" in str(info.value)
    assert len(llm.requests) == 1  # not retried


# -- retry rules ------------------------------------------------------------------------------
def test_tool_choice_refused_switches_to_auto_and_remembers(llm):
    llm.script(
        reply.error(400, "tool_choice 'required' is not supported by this model"),
        reply.tool_calls(("respond", {"content": "ok"})),
        reply.tool_calls(("respond", {"content": "again"})),
    )
    provider = OpenAIProvider(config(llm), "test-model")
    first, second = complete_many(provider, request(), request())
    assert calls(first) == [("respond", {"content": "ok"})]
    assert calls(second) == [("respond", {"content": "again"})]
    bodies = [r.body for r in llm.requests]
    assert [b["tool_choice"] for b in bodies] == ["required", "auto", "auto"]
    assert [b["messages"][-1] == {"role": "system", "content": TOOL_USE_REMINDER} for b in bodies] == [
        False,
        True,
        True,
    ]
    assert first.request_body == bodies[1]


def test_tool_choice_refused_twice_is_an_error(llm):
    llm.script(reply.error(400, "bad tool_choice"), reply.error(400, "tool_choice still bad"))
    with pytest.raises(ProviderError) as info:
        complete(config(llm))
    assert info.value.status == 400
    assert info.value.server_message == "tool_choice still bad"
    assert f"HTTP 400 from {llm.base_url}/chat/completions: tool_choice still bad" in str(info.value)
    assert len(llm.requests) == 2


def test_streaming_refused_falls_back_and_remembers(llm):
    llm.script(
        reply.error(400, "streaming is not supported"),
        reply.tool_calls(("respond", {"content": "plain"})),
        reply.tool_calls(("respond", {"content": "plain again"})),
    )
    events: list[dict] = []

    async def main():
        provider = OpenAIProvider(config(llm), "test-model")
        try:
            a = await provider.complete(request(), on_delta=events.append)
            b = await provider.complete(request())
            return a, b
        finally:
            await provider.aclose()

    first, second = asyncio.run(main())
    assert calls(first) == [("respond", {"content": "plain"})]
    assert calls(second) == [("respond", {"content": "plain again"})]
    assert [r.body.get("stream") for r in llm.requests] == [True, None, None]
    assert events[-1]["arguments"] == '{"content": "plain"}'  # a JSON answer still reaches on_delta


def test_rate_limit_rotates_keys(llm):
    llm.script(reply.error(429, "slow down"), reply.tool_calls(("respond", {"content": "ok"})))
    cfg = config(llm, api_keys=[KeySource("k1"), KeySource("k2")])
    result = complete(cfg)
    assert calls(result) == [("respond", {"content": "ok"})]
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer k1", "Bearer k2"]


def test_rotation_carries_over_to_the_next_call(llm):
    llm.script(reply.error(429, "slow down"), reply.tool_calls(("respond", {"content": "ok"})))
    provider = OpenAIProvider(config(llm, api_keys=[KeySource("k1"), KeySource("k2")]), "test-model")
    complete_many(provider, request(), request())
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer k1", "Bearer k2", "Bearer k2"]


def test_all_keys_rate_limited(llm):
    llm.script(reply.error(429, "quota"), reply.error(429, "quota"), reply.tool_calls(("respond", {"content": "x"})))
    cfg = config(llm, api_keys=[KeySource("k1"), KeySource("k2")])
    with pytest.raises(ProviderError) as info:
        complete(cfg)
    assert "rate limited (HTTP 429) on all 2 API keys: quota" in str(info.value)
    assert info.value.status == 429
    assert len(llm.requests) == 2
    assert llm.pending == 1


def test_single_key_rate_limited(llm):
    llm.script(reply.error(429, "quota"))
    with pytest.raises(ProviderError, match=r"rate limited \(HTTP 429\) on the only API key: quota"):
        complete(config(llm))


def test_unset_env_key_names_variable_and_line(llm, monkeypatch):
    monkeypatch.delenv("CIREIL_TEST_UNSET_KEY", raising=False)
    text = f'[local]\napiBase = "{llm.base_url}"\ndefaultModel = "test-model"\nisGlobalDefault = true\n'
    text += 'apiKey = { env = "CIREIL_TEST_UNSET_KEY" }\n'
    engine, issues = parse_engine_config(TomlSource.parse(ENGINE_FILE, text))
    assert issues == []
    with pytest.raises(ProviderError) as info:
        complete(engine.providers["local"])
    message = str(info.value)
    assert "config/engine.toml:5: apiKey names the environment variable CIREIL_TEST_UNSET_KEY" in message
    assert "not set" in message
    assert llm.requests == []  # nothing was sent without a key
    monkeypatch.setenv("CIREIL_TEST_UNSET_KEY", "sk-now-set")
    complete(engine.providers["local"])
    assert llm.requests[0].headers["authorization"] == "Bearer sk-now-set"


def test_server_error_message(llm):
    llm.script(reply.error(503, "model is overloaded"))
    with pytest.raises(ProviderError) as info:
        complete(config(llm))
    assert info.value.status == 503
    assert str(info.value) == (f"provider 'local': HTTP 503 from {llm.base_url}/chat/completions: model is overloaded")


def test_unreachable_server():
    with ScriptedLLM() as gone:
        base = gone.base_url  # a port that was free a moment ago and is closed now
    cfg = ProviderConfig("local", api_base=base, default_model="m")
    with pytest.raises(ProviderError, match="could not talk to"):
        complete(cfg)


# -- cancellation -----------------------------------------------------------------------------
def test_cancellation_mid_stream_propagates_and_closes_the_connection(llm):
    llm.script(reply.tool_calls(("respond", {"content": "a long answer that never finishes"}), delay=60))
    started = threading.Event()

    async def main():
        provider = OpenAIProvider(config(llm), "test-model")
        seen = asyncio.Event()

        def on_delta(event: dict) -> None:
            seen.set()

        task = asyncio.create_task(provider.complete(request(), on_delta=on_delta))
        await seen.wait()  # the reply has started streaming
        started.set()
        task.cancel()
        try:
            await task
        finally:
            await provider.aclose()

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert started.is_set()
    assert llm.disconnected.wait(30), "the server never saw the client hang up"
    assert llm.requests[0].disconnected


def test_loopback_server_is_reached_without_the_environment_proxy(llm, monkeypatch):
    with ScriptedLLM() as dead:
        proxy = f"http://127.0.0.1:{dead.port}"  # closed once the block ends: a proxy that answers nothing
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    llm.script(reply.tool_calls(("respond", {"content": "direct"})))
    assert calls(complete(config(llm))) == [("respond", {"content": "direct"})]


def test_a_client_passed_in_is_used_and_left_open(llm):
    llm.script(reply.tool_calls(("respond", {"content": "a"})), reply.tool_calls(("respond", {"content": "b"})))

    async def main():
        async with httpx.AsyncClient(headers={"X-Shared-Client": "yes"}) as client:
            provider = OpenAIProvider(config(llm), "test-model", client=client)
            await provider.complete(request())
            await provider.aclose()
            assert not client.is_closed
            await provider.complete(request())  # still usable after aclose: the client is the caller's
            await provider.aclose()
            assert not client.is_closed

    asyncio.run(main())
    assert [r.headers.get("x-shared-client") for r in llm.requests] == ["yes", "yes"]


# -- customHeaders and key pools (upstream-formats.md §2.5, §2.6) ------------------------------------------


def test_header_lists_go_as_one_line_each_and_override_case_insensitively(llm):
    llm.script(reply.tool_calls(("respond", {"content": "hi"})))
    text = (
        f'[local]\napiBase = "{llm.base_url}"\ndefaultModel = "test-model"\nisGlobalDefault = true\n'
        '[local.customHeaders]\nX-Trace = ["a", "b"]\nhttp-referer = "https://example.org"\nX-Team = "garden"\n'
        'Authorization = "Bearer from-header"\ncontent-type = "text/plain"\n'
    )
    engine, issues = parse_engine_config(TomlSource.parse(ENGINE_FILE, text))
    assert issues == []
    complete(engine.providers["local"])
    lines = llm.requests[0].header_lines
    assert [v for k, v in lines if k == "x-trace"] == ["a", "b"]
    assert [v for k, v in lines if k == "http-referer"] == ["https://example.org"]
    assert [v for k, v in lines if k == "x-team"] == ["garden"]
    assert [v for k, v in lines if k == "authorization"] == ["Bearer from-header"]  # custom headers win
    assert [v for k, v in lines if k == "content-type"] == ["application/json"]  # except over the body's type


def test_keys_are_taken_round_robin_per_request(llm):
    llm.script(*[reply.tool_calls(("respond", {"content": "ok"}))] * 4)
    provider = OpenAIProvider(config(llm, api_keys=[KeySource("k1"), KeySource("k2"), KeySource("k3")]), "test-model")
    complete_many(provider, request(), request(), request(), request())
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer k1", "Bearer k2", "Bearer k3", "Bearer k1"]


def test_an_unusable_reply_hands_the_same_key_to_the_next_request(llm):
    llm.script(reply.text("no tool call"), reply.tool_calls(("respond", {"content": "ok"})))
    provider = OpenAIProvider(config(llm, api_keys=[KeySource("k1"), KeySource("k2")]), "test-model")
    first, second = complete_many(provider, request(), request())
    assert isinstance(first, NoToolCalls)
    assert not isinstance(second, ProviderError)
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer k1", "Bearer k1"]


def test_a_benched_key_stays_benched_and_providers_with_the_same_keys_share_the_pool(llm):
    from cireil.runtime.engine.keypool import KeyPools

    pools = KeyPools()
    keys = [KeySource("k1"), KeySource("k2")]
    llm.script(reply.error(429, "slow"), *[reply.tool_calls(("respond", {"content": "ok"}))] * 3)
    a = OpenAIProvider(config(llm, api_keys=keys), "test-model", pools=pools)
    b = OpenAIProvider(ProviderConfig("other", api_base=llm.base_url, api_keys=list(keys)), "m", pools=pools)
    complete_many(a, request())
    complete_many(b, request(), request())
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer k1", "Bearer k2", "Bearer k2", "Bearer k2"]


def test_every_key_benched_fails_without_sending(llm):
    llm.script(reply.error(429, "quota"), reply.tool_calls(("respond", {"content": "x"})))
    provider = OpenAIProvider(config(llm), "test-model")
    first, second = complete_many(provider, request(), request())
    assert "rate limited (HTTP 429) on the only API key: quota" in str(first)
    assert isinstance(second, ProviderError) and second.status == 429
    assert "the only API key rate limited (HTTP 429) recently; the next is tried again in ~1800 s" in str(second)
    assert len(llm.requests) == 1


def test_the_chosen_model_table_is_sent_even_when_it_is_the_default_providers(llm):
    llm.script(reply.tool_calls(("respond", {"content": "hi"})))
    cfg = config(llm)
    provider = OpenAIProvider(cfg, "test-model", model_cfg=ModelConfig(reasoning="minimal"))
    complete_many(provider, request())
    assert llm.requests[0].body["reasoning"] == {"effort": "minimal"}
