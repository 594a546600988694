"""availableModels = "analyze": the provider's GET /models, asked once per load, as `%cireil models` shows and
as the context-window fallback of a model table without contextWindow (upstream-formats §2.2, §2.3)."""

from __future__ import annotations

import json

import pytest

import cireil
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.config.engine_config import KeySource, ProviderConfig
from cireil.runtime.engine.models import ModelCatalog, fetch_models
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent

MODELS = [
    {"id": "scripted-1", "context_length": 4096},
    {"id": "big", "top_provider": {"context_length": 200000}},
    {"id": "plain"},
]


def provider(llm: ScriptedLLM, **kw) -> ProviderConfig:
    return ProviderConfig("local", api_base=llm.base_url, default_model="scripted-1", **kw)


def test_the_list_with_context_windows_and_the_first_key(llm):
    llm.models = MODELS
    cfg = provider(llm, api_keys=[KeySource("k1"), KeySource("k2")], custom_headers={"X-Tag": ["a", "b"]})
    listing = RUNTIME.run(fetch_models(cfg))
    assert listing.error is None and listing.source == "analyze"
    assert [(m.id, m.context_window) for m in listing.models] == [
        ("scripted-1", 4096),
        ("big", 200000),
        ("plain", None),
    ]
    (sent,) = llm.model_requests
    assert sent.path == "/v1/models" and sent.headers["authorization"] == "Bearer k1"
    assert [v for k, v in sent.header_lines if k == "x-tag"] == ["a", "b"]


def test_a_provider_without_a_model_list_says_so(llm):
    listing = RUNTIME.run(fetch_models(provider(llm)))
    assert listing.models == [] and listing.error.startswith("the provider has no model list:")
    assert "answered HTTP 404" in listing.error


def test_an_unreachable_provider_says_so():
    listing = RUNTIME.run(fetch_models(ProviderConfig("x", api_base="http://127.0.0.1:9/v1", default_model="m")))
    assert listing.error.startswith("could not reach http://127.0.0.1:9/v1/models")


def test_asked_once_per_load_and_a_written_list_is_not_asked(llm):
    llm.models = MODELS
    catalog = ModelCatalog()
    cfg = provider(llm)
    RUNTIME.run(catalog.lookup(cfg))
    RUNTIME.run(catalog.lookup(cfg))
    assert len(llm.model_requests) == 1
    written = provider(llm, available_models=["a", "b"])
    listing = RUNTIME.run(catalog.lookup(written))
    assert listing.source == "config" and [m.id for m in listing.models] == ["a", "b"]
    assert len(llm.model_requests) == 1


def test_a_turn_takes_the_context_window_from_the_list(tmp_path, llm):
    llm.models = MODELS
    agent = cireil.load(turn_agent(tmp_path, llm.base_url))
    try:
        llm.script(reply.tool_calls(("respond", {"content": "ok"})))
        assert agent.turn("hi").ended == "respond"
        metadata = llm.requests[0].body["messages"][-1]["content"][0]["text"]
        assert "/ 4096 tokens" in metadata  # the model table has no contextWindow: the list's is used
        llm.script(reply.tool_calls(("respond", {"content": "again"})))
        agent.turn("again")
        assert len(llm.model_requests) == 1
        assert "/ 4096 tokens" in agent.prompt().assembled.metadata  # the preview uses the cached list
    finally:
        agent.close()


def test_a_written_context_window_wins_and_nothing_is_asked(tmp_path, llm):
    llm.models = MODELS
    agent = cireil.load(turn_agent(tmp_path, llm.base_url, model_extra="contextWindow = 9000\n"))
    try:
        llm.script(reply.tool_calls(("respond", {"content": "ok"})))
        agent.turn("hi")
        assert "/ 9000 tokens" in llm.requests[0].body["messages"][-1]["content"][0]["text"]
        assert llm.model_requests == []
    finally:
        agent.close()


def test_the_models_magic(tmp_path, llm):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from magicshell import loaded, run, usage_error

    llm.models = MODELS
    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    agent_dir = turn_agent(tmp_path, llm.base_url)
    engine = agent_dir / "config" / "engine.toml"
    engine.write_text(engine.read_text() + '\n[other]\napiBase = "http://127.0.0.1:9/v1"\ndefaultModel = "m"\n')
    try:
        loaded(shell, agent_dir)
        (bundle,) = run(shell, "%cireil models").displayed
        text = bundle["text/plain"]
        assert "local: asked the provider (availableModels = analyze)" in text
        assert "scripted-1  4,096 tokens  (default)" in text and "plain  context window unknown" in text
        assert "other: asked the provider" in text and "unavailable: could not reach" in text
        assert "<script" not in bundle["text/html"] and "200,000" in bundle["text/html"]
        assert "usage: %cireil models" in usage_error(shell, "%cireil models x")
    finally:
        if "cireil" in shell.extension_manager.loaded:
            shell.extension_manager.unload_extension("cireil")
        InteractiveShell.clear_instance()


def test_window_fields_as_the_original_reads_them():
    from cireil.runtime.engine.models import parse_model_list

    data = {
        "data": [
            {"id": "a", "context_length": 1000, "top_provider": {"context_length": 2000}, "max_input_tokens": 3000},
            {"id": "b", "top_provider": {"context_length": 2000}, "max_input_tokens": 3000},
            {"id": "c", "max_input_tokens": 3000},
            {"id": "d", "context_window": 5},  # not a field the original reads
        ]
    }
    assert [m.context_window for m in parse_model_list(data)] == [1000, 2000, 3000, None]
    assert [m.context_window for m in parse_model_list(data, "anthropic")] == [3000, 3000, 3000, None]
    with pytest.raises(ValueError, match="no list of models"):
        parse_model_list([{"id": "x"}])


def test_a_fork_sees_the_context_window_the_turn_saw_without_asking_again_offline(tmp_path, llm):
    llm.models = MODELS
    agent = cireil.load(turn_agent(tmp_path, llm.base_url))
    try:
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("respond", {"content": "ok"})),
        )
        agent.turn("hi")
        original = agent.turns()[-1]
        outcome = agent.fork(original.id, 1)
        (forked,) = agent.turns(outcome.session_id)
        for step in forked.steps:  # the metadata message says the window pruning worked against
            assert "/ 4096 tokens" in json.dumps(step.request["messages"][-1])
        assert len(llm.model_requests) == 1  # the list was asked once, by the turn
    finally:
        agent.close()
