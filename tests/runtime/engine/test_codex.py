"""kind = "openai-codex" against the scripted server speaking the Codex Responses API and an OAuth token endpoint
on loopback: request shape and headers, text, tool use, reasoning, usage, streaming, the login file (refresh before
expiry and on 401, refresh failure, missing or malformed file) and a whole agent turn."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from pathlib import Path

import pytest

import cireil
from cireil.runtime.config.engine_config import ProviderConfig
from cireil.runtime.engine import codex_auth
from cireil.runtime.engine.codex import CodexProvider, normalize_model, reasoning
from cireil.runtime.engine.openai import ModelRequest, NoToolCalls, ProviderError
from cireil.runtime.sessions import messages as M
from cireil.testing.scripted_llm import ScriptedLLM, reply
from conftest import make_agent
from turnkit import TURN_TOOLS

TOOLS = [
    {
        "name": "respond",
        "description": "Say something.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
    }
]


@pytest.fixture
def llm(monkeypatch):
    with ScriptedLLM() as server:
        monkeypatch.setenv(codex_auth.TOKEN_URL_VARIABLE, server.codex.token_url)
        yield server


@pytest.fixture
def agent_dir(tmp_path) -> Path:
    """An agent in a runtime root, as the original lays it out: the login lives in <root>/config/openai-codex/."""
    return make_agent(tmp_path / "root" / "agents", TURN_TOOLS, name="wren")


def login_file(agent_dir: Path, auth_id: str = "default") -> Path:
    return agent_dir.parents[1] / "config" / "openai-codex" / f"{auth_id}.json"


def write_login(agent_dir: Path, data: dict, auth_id: str = "default") -> Path:
    path = login_file(agent_dir, auth_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)
    return path


def config(llm: ScriptedLLM, **kw) -> ProviderConfig:
    return ProviderConfig("codex", kind="openai-codex", api_base=llm.base_url, default_model="gpt-5.2-codex", **kw)


def request(messages: list | None = None) -> ModelRequest:
    return ModelRequest("You are a test.", messages or [M.user_message("hello")], TOOLS, "s-1", "gpt-5.2-codex")


def complete(cfg: ProviderConfig, agent_dir: Path, req: ModelRequest | None = None, *, model_cfg=None, **kw):
    async def main():
        provider = CodexProvider(cfg, cfg.default_model, model_cfg=model_cfg, agent_dir=agent_dir)
        try:
            return await provider.complete(req or request(), **kw)
        finally:
            await provider.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("json_only", [False, True])
def test_tool_use_with_text_reasoning_and_usage(llm, agent_dir, json_only):
    login = llm.codex.login(account="acct-42")
    write_login(agent_dir, login)
    llm.script(reply.tool_calls(("respond", {"content": "hi"}), reasoning="think first", text="a", json_only=json_only))
    events: list[dict] = []
    result = complete(config(llm), agent_dir, on_delta=events.append)
    sent = llm.requests[0]
    assert sent.path == "/v1/codex/responses"
    assert sent.headers["authorization"] == f"Bearer {login['accessToken']}"
    assert sent.headers["chatgpt-account-id"] == "acct-42"
    assert sent.headers["openai-beta"] == "responses=experimental" and sent.headers["originator"] == "codex_cli_rs"
    assert sent.headers["session_id"] == sent.headers["conversation_id"] == "s-1"
    assert sent.headers["accept"] == "text/event-stream"
    body = sent.body
    assert body["instructions"] == "You are a test." and body["model"] == "gpt-5.2-codex"
    assert body["input"] == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}]
    assert (body["store"], body["stream"], body["include"]) == (False, True, ["reasoning.encrypted_content"])
    assert body["tool_choice"] == "required" and body["prompt_cache_key"] == "s-1"
    assert body["tools"][0] == {"type": "function", "strict": False, **TOOLS[0]}
    assert body["reasoning"] == {"effort": "high", "summary": "detailed"}  # the default for a 5.2 codex model
    parts = result.message["content"]
    assert parts[0] == {"type": "thinking", "thinking": "think first"}
    assert parts[1] == {"type": "redacted_thinking", "data": "scripted-encrypted-1"}
    assert parts[2]["type"] == "toolCall" and parts[2]["input"] == {"content": "hi"} and parts[2]["name"] == "respond"
    assert parts[2]["id"] == "call_scripted_0"
    assert len(parts) == 3  # free text beside calls is not kept, as the original
    assert result.finish_reason == "completed"
    usage = result.usage
    assert usage["prompt_tokens"] > 0 and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    if not json_only:  # the notebook sees the reply as it streams
        kinds = [e["type"] for e in events]
        assert "thinking" in kinds and "text" in kinds
        calls = [e for e in events if e["type"] == "toolCall"]
        assert len(calls) > 2 and calls[-1]["arguments"] == '{"content": "hi"}' and calls[-1]["id"] == "call_scripted_0"


def test_history_goes_back_as_input_items_with_the_encrypted_reasoning(llm, agent_dir):
    write_login(agent_dir, llm.codex.login())
    llm.script(reply.tool_calls(("respond", {"content": "ok"})))
    image = {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="}
    video = {"type": "video", "mediaType": "video/mp4", "data": "AAAA"}
    history = [
        M.user_message("look", parts=[image, video]),
        M.assistant_message(
            [
                {"type": "thinking", "thinking": "a summary"},
                {"type": "redacted_thinking", "data": "enc-1"},
                {"type": "toolCall", "id": "call_1", "name": "respond", "input": {"content": "x"}},
            ]
        ),
        M.tool_response("call_1", "respond", {"success": True}),
        M.assistant_message([{"type": "thinking", "thinking": "from another kind"}]),
        {"role": "system", "content": "Current date: now"},
    ]
    complete(config(llm), agent_dir, request(history))
    assert llm.requests[0].body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        },
        {"type": "reasoning", "encrypted_content": "enc-1", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "respond", "arguments": '{"content":"x"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"name":"respond","success":true}'},
        {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "from another kind", "annotations": []}],
        },
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Current date: now"}]},
    ]


def test_a_reply_without_a_function_call_keeps_its_text(llm, agent_dir):
    write_login(agent_dir, llm.codex.login())
    llm.script(reply.text("just words", reasoning="hm"))
    with pytest.raises(NoToolCalls) as info:
        complete(config(llm), agent_dir)
    assert (info.value.text, info.value.thinking, info.value.finish_reason) == ("just words", "hm", "completed")


def test_a_failed_stream_and_a_usage_limit_say_what_the_server_said(llm, agent_dir):
    write_login(agent_dir, llm.codex.login())
    llm.script(reply.stream_error("the model is overloaded"))
    with pytest.raises(ProviderError, match="the server reported an error: the model is overloaded"):
        complete(config(llm), agent_dir)
    llm.script(reply.error(404, "usage_limit_reached: try again at 5pm"))
    with pytest.raises(ProviderError, match="OpenAI Codex usage limit reached: usage_limit_reached"):
        complete(config(llm), agent_dir)


def test_a_token_within_a_minute_of_expiry_is_refreshed_and_the_file_rewritten(llm, agent_dir):
    login = llm.codex.login(expires_in_s=30)
    path = write_login(agent_dir, {**login, "note": "kept"})
    path.chmod(0o644)  # the rewrite makes it private again
    llm.script(reply.tool_calls(("respond", {"content": "ok"})))
    complete(config(llm), agent_dir)
    assert llm.codex.token_requests == [
        {"client_id": codex_auth.CLIENT_ID, "grant_type": "refresh_token", "refresh_token": login["refreshToken"]}
    ]
    saved = json.loads(path.read_text())
    assert saved["note"] == "kept" and saved["accessToken"] != login["accessToken"]
    assert saved["refreshToken"] != login["refreshToken"] and saved["expiresAt"] > login["expiresAt"]
    assert path.read_text() == json.dumps(saved, indent=2)  # pretty-printed, as the original writes it
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert llm.requests[0].headers["authorization"] == f"Bearer {saved['accessToken']}"
    assert [p.name for p in path.parent.iterdir()] == ["default.json"]  # no temporary file left


def test_a_token_refused_with_401_is_refreshed_once_and_the_request_sent_again(llm, agent_dir):
    login = llm.codex.login()  # an hour left by the file's clock ...
    path = write_login(agent_dir, login)
    llm.codex.expire(login["accessToken"])  # ... but the server no longer takes it
    llm.script(reply.tool_calls(("respond", {"content": "ok"})))
    result = complete(config(llm), agent_dir)
    assert result.message["content"][-1]["input"] == {"content": "ok"}
    assert len(llm.codex.token_requests) == 1 and len(llm.requests) == 2
    saved = json.loads(path.read_text())
    assert [r.headers["authorization"] for r in llm.requests] == [
        f"Bearer {login['accessToken']}",
        f"Bearer {saved['accessToken']}",
    ]


def test_a_failed_refresh_names_the_file_and_how_to_log_in_again_without_a_token(llm, agent_dir):
    login = llm.codex.login(expires_in_s=-10)  # expired
    path = write_login(agent_dir, login)
    before = path.read_text()
    llm.codex.refresh_failure = (400, {"error": "invalid_grant", "error_description": "refresh token was revoked"})
    with pytest.raises(ProviderError) as info:
        complete(config(llm), agent_dir)
    message = str(info.value)
    assert "refreshing the OpenAI Codex login in ../../config/openai-codex/default.json failed" in message
    assert "HTTP 400" in message and "refresh token was revoked" in message
    assert "`cireilclaw codex --authId default`" in message
    assert login["accessToken"] not in message and login["refreshToken"] not in message
    assert info.value.retryable is False  # a turn does not spend its retries on it
    assert path.read_text() == before and llm.requests == []


def test_the_token_endpoint_may_be_redirected_only_to_loopback(llm, agent_dir, monkeypatch):
    write_login(agent_dir, llm.codex.login(expires_in_s=0))
    monkeypatch.setenv(codex_auth.TOKEN_URL_VARIABLE, "https://example.com/oauth/token")
    with pytest.raises(ProviderError, match="may only name an http:// loopback address"):
        complete(config(llm), agent_dir)
    assert llm.codex.token_requests == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            None,
            "../../config/openai-codex/default.json does not exist: the original CireilClaw creates it with "
            "`cireilclaw codex --authId default`",
        ),
        ('{\n  "accessToken": "a",\n  oops\n}', "../../config/openai-codex/default.json:3: is not valid JSON"),
        ('{"accessToken": "a", "expiresAt": "soon"}', "'refreshToken' must be a non-empty string; 'expiresAt' must"),
        ("[1]", "must hold a JSON object, not list"),
    ],
)
def test_a_missing_or_malformed_login_fails_before_anything_is_sent(llm, agent_dir, content, expected):
    if content is not None:
        write_login(agent_dir, {}).write_text(content)
    with pytest.raises(ProviderError) as info:
        complete(config(llm), agent_dir)
    assert expected in str(info.value) and llm.requests == []


def test_an_auth_id_is_a_file_name_not_a_path(llm, agent_dir):
    with pytest.raises(ProviderError, match=re.escape("authId '../x' may only contain letters")):
        complete(config(llm, auth_id="../x"), agent_dir)


def test_custom_headers_replace_or_repeat_the_built_ins(llm, agent_dir):
    write_login(agent_dir, llm.codex.login())
    llm.script(reply.tool_calls(("respond", {})))
    complete(config(llm, custom_headers={"originator": "mine", "X-Tag": ["a", "b"]}), agent_dir)
    lines = llm.requests[0].header_lines
    assert [v for k, v in lines if k == "originator"] == ["mine"]
    assert [v for k, v in lines if k == "x-tag"] == ["a", "b"]


def test_model_names_and_reasoning_as_the_original_maps_them():
    assert normalize_model("openai/gpt-5-codex") == "gpt-5.1-codex"
    assert normalize_model("gpt-5.2-codex-high") == "gpt-5.2-codex"
    assert normalize_model("GPT-5.1-Codex-Max-XHigh") == "gpt-5.1-codex-max"
    assert normalize_model("gpt-5.4-none") == "gpt-5.4"
    assert normalize_model("") == "gpt-5.1-codex" and normalize_model("o3") == "o3"
    assert reasoning("gpt-5.1-codex-mini", "low") == {"effort": "medium", "summary": "auto"}
    assert reasoning("gpt-5.1-codex", "xhigh") == {"effort": "high", "summary": "detailed"}
    assert reasoning("gpt-5.1-codex", False) == {"effort": "low", "summary": "auto"}  # codex models take no "none"
    assert reasoning("gpt-5.2", False) == {"effort": "none", "summary": "auto"}
    assert reasoning("gpt-5.1", True) == {"effort": "medium", "summary": "auto"}
    assert reasoning("gpt-5.2", "minimal") == {"effort": "low", "summary": "auto"}


def codex_agent(agent_dir: Path, llm: ScriptedLLM) -> Path:
    (agent_dir / "config" / "engine.toml").write_text(
        "[codex]\n"
        'kind = "openai-codex"\n'
        f'apiBase = "{llm.base_url}"\n'
        'defaultModel = "gpt-5.1-codex"\n'
        "isGlobalDefault = true\n"
    )
    (agent_dir / "workspace" / "notes.md").write_text("# Notes\n\nBuy milk.\n")
    return agent_dir


def test_an_agent_turn_with_an_openai_codex_provider(llm, agent_dir):
    login = llm.codex.login()
    write_login(agent_dir, login)
    codex_agent(agent_dir, llm)
    assert cireil.dry_run(agent_dir).ok
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}), reasoning="read it"),
        reply.tool_calls(("respond", {"content": "You need milk."})),
    )
    agent = cireil.load(agent_dir)
    try:
        assert not [w for w in agent.warnings if "codex" in str(w)]
        events: list[dict] = []
        outcome = agent.turn("What do I need?", on_event=events.append)
        assert outcome.ended == "respond" and outcome.steps == 2, outcome.error
        assert outcome.text == "You need milk." and outcome.usage["total_tokens"] > 0
        second = llm.requests[1].body["input"]
        assert {"type": "reasoning", "encrypted_content": "scripted-encrypted-1", "summary": []} in second
        outputs = [i for i in second if i["type"] == "function_call_output"]
        assert len(outputs) == 1 and "Buy milk" in outputs[0]["output"]
        # the session keeps the encrypted reasoning for the next turn, as the original stores it
        stored = [p["type"] for p in agent.session.history[1]["content"]]
        assert stored == ["thinking", "redacted_thinking", "toolCall"]
        # %cireil prompt and the turn's events show the request, never the token
        prompt = agent.prompt()
        assert prompt.url == f"{llm.base_url}/codex/responses" and prompt.body["store"] is False
        shown = dict(prompt.headers)
        assert shown["Authorization"] == "Bearer <access token from ../../config/openai-codex/default.json>"
        assert shown["chatgpt-account-id"] == "<from the access token>"
        everything = json.dumps([prompt.body, prompt.headers, events], default=str)
        assert login["accessToken"] not in everything and login["refreshToken"] not in everything
    finally:
        agent.close()


def test_a_codex_turn_is_recorded_item_by_item_and_its_steps_diff_by_what_they_are(llm, agent_dir):
    import sqlite3

    write_login(agent_dir, llm.codex.login())
    codex_agent(agent_dir, llm)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "You need milk."})),
    )
    agent = cireil.load(agent_dir)
    try:
        agent.turn("What do I need?")
        (turn,) = agent.turns()
        first, second = turn.steps
        assert second.request == llm.requests[1].body  # exactly what was POSTed, rebuilt from stored items
        assert "messages" not in second.request
        diff = second.diff(first)
        assert [diff.kind(m) for m in diff.added] == ["assistant", "tool result"]
        assert "Buy milk" in diff.added[1]["content"] and not diff.removed
        db = sqlite3.connect(agent_dir / "cireil-recordings.db")
        try:
            skeletons = [json.loads(r[0]) for r in db.execute("SELECT request FROM steps ORDER BY n")]
        finally:
            db.close()
        assert all(isinstance(h, str) for s in skeletons for h in s["input"])  # items stored once, by hash
    finally:
        agent.close()


def test_a_missing_login_is_said_at_load_and_fails_the_turn_naming_the_file(llm, agent_dir):
    codex_agent(agent_dir, llm)
    report = cireil.dry_run(agent_dir)
    warning = [str(w) for w in report.warnings if "openai-codex" in str(w)]
    assert warning == [
        "../../config/openai-codex/default.json: warning: does not exist: the original CireilClaw creates it with "
        "`cireilclaw codex --authId default` (a browser login to ChatGPT; `cireilclaw codex` alone for authId "
        "\"default\"), and cireil reads the same file; turns with provider 'codex' (config/engine.toml:2) fail "
        "until it is there"
    ]
    agent = cireil.load(agent_dir)
    try:
        assert any("openai-codex/default.json" in str(w) for w in agent.warnings)
        with pytest.raises(cireil.ConfigError) as info:
            agent.turn("hi")
        assert str(info.value).startswith("../../config/openai-codex/default.json: does not exist: the original")
        assert "(the OAuth login of provider 'codex', config/engine.toml:2)" in str(info.value)
        assert agent.session.history == [] and llm.requests == []
        write_login(agent_dir, llm.codex.login())  # logged in meanwhile: the next turn runs
        llm.script(reply.tool_calls(("respond", {"content": "ok"})))
        assert agent.turn("hi").ended == "respond"
    finally:
        agent.close()


def test_a_malformed_or_loose_login_is_warned_about_at_load_with_its_line(llm, agent_dir):
    codex_agent(agent_dir, llm)
    path = write_login(agent_dir, {})
    path.write_text('{\n  "accessToken": 5,\n  "expiresAt": 1,\n  "refreshToken": "r"\n}')
    shown = [str(w) for w in cireil.dry_run(agent_dir).warnings if "openai-codex" in str(w)]
    assert len(shown) == 1 and shown[0].startswith(
        "../../config/openai-codex/default.json: warning: 'accessToken' must be a non-empty string"
    )
    write_login(agent_dir, llm.codex.login()).chmod(0o640)
    shown = [str(w) for w in cireil.dry_run(agent_dir).warnings if "openai-codex" in str(w)]
    assert len(shown) == 1 and "is readable by others (mode 640)" in shown[0]


def test_a_standalone_agent_uses_the_originals_root_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = Path(os.path.realpath(tmp_path / "home")) / ".cireilclaw" / "config" / "openai-codex" / "me.json"
    assert codex_auth.login_path(tmp_path / "myagent", "me") == expected
    assert codex_auth.login_path(tmp_path / "root" / "agents" / "a", "me") == (
        tmp_path / "root" / "config" / "openai-codex" / "me.json"
    )


def test_the_prompt_magic_shows_the_codex_request_with_the_token_redacted(llm, agent_dir):
    from kernelharness import Kernel

    login = llm.codex.login()
    write_login(agent_dir, login)
    codex_agent(agent_dir, llm)
    kernel = Kernel(cwd=agent_dir.parent)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
        shown = kernel.run("%cireil prompt").text()
        assert f"POST {llm.base_url}/codex/responses" in shown
        assert "Authorization: Bearer <access token from ../../config/openai-codex/default.json>" in shown
        assert login["accessToken"] not in shown and login["refreshToken"] not in shown
    finally:
        kernel.shutdown()


def test_a_turn_does_not_spend_its_retries_on_a_login_that_cannot_be_refreshed(llm, agent_dir):
    write_login(agent_dir, llm.codex.login(expires_in_s=5))
    codex_agent(agent_dir, llm)
    llm.codex.refresh_failure = (401, {"error": "invalid_grant"})
    agent = cireil.load(agent_dir)
    try:
        with pytest.raises(ProviderError, match="log in again with `cireilclaw codex --authId default`"):
            agent.turn("hi")
        assert len(llm.codex.token_requests) == 1 and llm.requests == []  # maxGenerationRetries = 2 not used
    finally:
        agent.close()


def test_two_requests_racing_on_an_expiring_login_refresh_it_once(llm, agent_dir):
    write_login(agent_dir, llm.codex.login(expires_in_s=10))
    llm.script(reply.tool_calls(("respond", {"content": "1"})), reply.tool_calls(("respond", {"content": "2"})))
    cfg = config(llm)

    async def main():
        providers = [CodexProvider(cfg, cfg.default_model, agent_dir=agent_dir) for _ in range(2)]
        try:
            return await asyncio.gather(*(p.complete(request()) for p in providers))
        finally:
            for p in providers:
                await p.aclose()

    results = asyncio.run(main())
    # the refresh token is used up by its refresh: a second refresh would have been refused
    assert len(llm.codex.token_requests) == 1 and len(results) == 2
    saved = json.loads(login_file(agent_dir).read_text())
    assert {r.headers["authorization"] for r in llm.requests} == {f"Bearer {saved['accessToken']}"}
