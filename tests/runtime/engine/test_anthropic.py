"""kind = "anthropic" against the scripted server speaking the Messages API on loopback: request shape,
text, tool use, images, thinking blocks, streaming, 429 key rotation, errors, and a whole agent turn."""

from __future__ import annotations

import asyncio

import pytest

import cireil
from cireil.runtime.config.engine_config import KeySource, ModelConfig, ProviderConfig
from cireil.runtime.engine.anthropic import BETA, MAX_TOKENS, VERSION, AnthropicProvider
from cireil.runtime.engine.openai import ModelRequest, NoToolCalls, ProviderError
from cireil.runtime.sessions import messages as M
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent

TOOLS = [
    {
        "name": "respond",
        "description": "Say something.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
    }
]


def config(llm: ScriptedLLM, **kw) -> ProviderConfig:
    return ProviderConfig("claude", kind="anthropic", api_base=llm.base_url, default_model="claude-t", **kw)


def request(messages: list | None = None) -> ModelRequest:
    return ModelRequest("You are a test.", messages or [M.user_message("hello")], TOOLS, "s-1", "claude-t")


def complete(cfg: ProviderConfig, req: ModelRequest | None = None, *, model_cfg: ModelConfig | None = None, **kw):
    async def main():
        provider = AnthropicProvider(cfg, cfg.default_model, model_cfg=model_cfg)
        try:
            return await provider.complete(req or request(), **kw)
        finally:
            await provider.aclose()

    return asyncio.run(main())


NO_THINKING = ModelConfig(reasoning=False)


@pytest.mark.parametrize("json_only", [False, True])
def test_tool_use_with_text_and_thinking(llm, json_only):
    llm.script(reply.tool_calls(("respond", {"content": "hi"}), reasoning="think first", text="a", json_only=json_only))
    events: list[dict] = []
    result = complete(config(llm), on_delta=events.append, model_cfg=NO_THINKING)
    sent = llm.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"].startswith("Bearer ")  # OAuth-style, as the original sends it
    assert sent.headers["anthropic-version"] == VERSION and sent.headers["anthropic-beta"] == BETA
    assert "x-api-key" not in sent.headers
    assert sent.body["max_tokens"] == MAX_TOKENS
    assert sent.body["system"] == [{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}]
    assert sent.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent.body["tool_choice"] == {"type": "any"}
    assert sent.body["tools"][0]["input_schema"]["properties"] == {"content": {"type": "string"}}
    parts = result.message["content"]
    assert parts[0] == {"type": "thinking", "thinking": "think first", "signature": f"scripted-signature-{1}"}
    assert parts[1]["type"] == "toolCall" and parts[1]["name"] == "respond" and parts[1]["input"] == {"content": "hi"}
    assert result.finish_reason == "tool_use"
    assert result.usage["prompt_tokens"] > 0 and result.usage["total_tokens"] > result.usage["prompt_tokens"]
    kinds = [e["type"] for e in events]
    assert "thinking" in kinds and "toolCall" in kinds
    if not json_only:
        assert sent.body["stream"] is True
        assert len([e for e in events if e["type"] == "toolCall"]) > 1  # arguments arrive in pieces


def test_history_translation_images_tool_results_and_signed_thinking(llm):
    llm.script(reply.tool_calls(("respond", {"content": "ok"})))
    image = {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="}
    video = {"type": "video", "mediaType": "video/mp4", "data": "AAAA"}
    history = [
        M.user_message("look", parts=[image, video]),
        M.assistant_message(
            [
                {"type": "thinking", "thinking": "signed", "signature": "sig-1"},
                {"type": "thinking", "thinking": "unsigned (another kind)"},
                {"type": "toolCall", "id": "toolu_1", "name": "respond", "input": {"content": "x"}},
            ]
        ),
        M.tool_response("toolu_1", "respond", {"success": True}),
        M.tool_response("toolu_gone", "respond", {"success": True}),  # its tool_use was pruned: left out
        M.user_message("Current date: now"),
    ]
    complete(config(llm), request(history), model_cfg=NO_THINKING)
    assert llm.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed", "signature": "sig-1"},
                {"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {"content": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"name":"respond","success":true}'},
                {"type": "text", "text": "Current date: now"},
            ],
        },
    ]


def test_extended_thinking_only_when_reasoning_is_true(llm):
    llm.script(reply.tool_calls(("respond", {})), reply.tool_calls(("respond", {})))
    complete(config(llm), model_cfg=ModelConfig(reasoning=True, reasoning_budget=2048))
    complete(config(llm), model_cfg=ModelConfig(reasoning="high"))
    with_thinking, without = (r.body for r in llm.requests)
    assert with_thinking["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert with_thinking["tool_choice"] == {"type": "auto"}  # the API refuses "any" with thinking on
    assert "thinking" not in without and without["tool_choice"] == {"type": "any"}


def test_a_reply_without_tool_use_keeps_its_text(llm):
    llm.script(reply.text("just words", reasoning="hm"))
    with pytest.raises(NoToolCalls) as info:
        complete(config(llm), model_cfg=NO_THINKING)
    assert info.value.text == "just words" and info.value.thinking == "hm"
    assert info.value.finish_reason == "end_turn"


def test_429_rotates_keys(llm):
    llm.script(reply.error(429, "slow down"), reply.tool_calls(("respond", {"content": "ok"})))
    result = complete(config(llm, api_keys=[KeySource("k1"), KeySource("k2")]), model_cfg=NO_THINKING)
    assert result.message["content"][-1]["input"] == {"content": "ok"}
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer k1", "Bearer k2"]


def test_all_keys_rate_limited_and_server_errors_name_the_server_message(llm):
    llm.script(reply.error(429, "quota"), reply.error(429, "quota"))
    with pytest.raises(ProviderError, match=r"rate limited \(HTTP 429\) on all 2 API keys: quota"):
        complete(config(llm, api_keys=[KeySource("k1"), KeySource("k2")]), model_cfg=NO_THINKING)
    llm.script(reply.error(400, "messages: roles must alternate"))
    with pytest.raises(ProviderError) as info:
        complete(config(llm), model_cfg=NO_THINKING)
    assert info.value.status == 400 and "HTTP 400" in str(info.value) and "roles must alternate" in str(info.value)


def test_custom_headers_spread_over_the_built_ins(llm):
    llm.script(reply.tool_calls(("respond", {})))
    cfg = config(llm, custom_headers={"anthropic-beta": ["a", "b"], "X-Extra": "1"})
    complete(cfg, model_cfg=NO_THINKING)
    assert llm.requests[0].headers["anthropic-beta"] == "a,b"
    assert llm.requests[0].headers["x-extra"] == "1"


def test_an_agent_turn_with_an_anthropic_provider(tmp_path, llm):
    agent_dir = turn_agent(tmp_path, llm.base_url, extra='kind = "anthropic"\n', model_extra="reasoning = false\n")
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}), reasoning="read it"),
        reply.tool_calls(("respond", {"content": "You need milk."})),
    )
    agent = cireil.load(agent_dir)
    try:
        assert not [w for w in agent.warnings if "anthropic" in str(w)]  # spoken now: nothing to warn about
        outcome = agent.turn("What do I need?")
        assert outcome.ended == "respond" and outcome.steps == 2, outcome.error
        assert outcome.text == "You need milk." and outcome.usage["total_tokens"] > 0
        second = llm.requests[1].body["messages"]
        assert second[1]["role"] == "assistant" and second[1]["content"][0]["signature"].startswith("scripted-")
        assert second[2]["content"][0]["type"] == "tool_result" and "Buy milk" in second[2]["content"][0]["content"]
        assert agent.prompt().body["max_tokens"] == MAX_TOKENS  # %cireil prompt shows this kind's body
    finally:
        agent.close()
