"""A hostile or broken model provider, and turns without end (issue 29).

A lying server on loopback (cireil.testing.lying_llm) sends a gzip bomb, a line that never ends, a stream that
never ends, a huge error body and replies of the wrong shape; every one ends its call with one clear
ProviderError naming the limit and its setting, while the process's memory stays bounded. A model that calls
tools forever stops at [limits] max_steps, in a notebook turn and in cron and heartbeat turns alike.
"""

from __future__ import annotations

import asyncio
import gc
import re
import sqlite3
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import CireilError, ConfigError
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.config.cireil_config import DEFAULT_LIMITS, Limits
from cireil.runtime.config.engine_config import ProviderConfig
from cireil.runtime.engine.anthropic import AnthropicProvider
from cireil.runtime.engine.codex import _Items
from cireil.runtime.engine.httpcall import MAX_ERROR_TEXT
from cireil.runtime.engine.models import fetch_models
from cireil.runtime.engine.openai import ModelRequest, OpenAIProvider, ProviderError
from cireil.runtime.engine.replytypes import ProviderLimitExceeded
from cireil.runtime.engine.turn import StepLimitReached
from cireil.runtime.mcp.sse import SseParser
from cireil.testing.lying_llm import RESPOND, LyingLLM, answers, chunk
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent

MEMORY_BOUND_MIB = 64  # peak growth of the whole process over its level before the call

TOOLS = [{"name": "respond", "description": "Say it.", "parameters": {"type": "object", "properties": {}}}]


@pytest.fixture
def liar():
    with LyingLLM() as server:
        yield server


def call(url: str, limits: Limits = DEFAULT_LIMITS, provider_class: type = OpenAIProvider):
    """One model call; the reply, or the exception it ended with."""

    async def main():
        provider = provider_class(ProviderConfig("liar", api_base=url, default_model="m"), "m")
        provider.limits = limits
        try:
            return await provider.complete(ModelRequest("sys", [], TOOLS, "s-1", "m"))
        except Exception as exc:
            return exc
        finally:
            await provider.aclose()

    return asyncio.run(main())


def _hwm_kib() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def peak_growth_mib(action: Callable[[], object]) -> tuple[float, object]:
    """How far the process's peak resident memory rose over its level just before `action` (the kernel's
    resets the peak through /proc/self/clear_refs), or, where that is refused, the peak of Python's own
    allocations (tracemalloc)."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
        base = _hwm_kib()
    except OSError:
        tracemalloc.start()
        try:
            result = action()
            return tracemalloc.get_traced_memory()[1] / 2**20, result
        finally:
            tracemalloc.stop()
    result = action()
    return (_hwm_kib() - base) / 1024, result


def limit_error(result: object, setting: str) -> ProviderLimitExceeded:
    assert isinstance(result, ProviderLimitExceeded), repr(result)
    text = str(result)
    assert text.startswith("provider 'liar': ") and f"limits.{setting} in config/cireil.toml" in text, text
    assert "\n" not in text and len(text) < 1000
    return result


# -- sizes ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_gzip_bomb_ends_the_call_and_memory_stays_bounded(liar, stream):
    liar.answer = answers.gzip_bomb(300, stream=stream)  # ~0.3 MB on the wire, 300 MB decoded
    started = time.perf_counter()
    grown, result = peak_growth_mib(lambda: call(liar.base_url))
    limit_error(result, "max_body_mb" if not stream else "max_event_mb")
    assert grown < MEMORY_BOUND_MIB, f"peak memory grew by {grown:.0f} MiB"
    assert time.perf_counter() - started < 20


def test_the_body_cap_counts_decoded_bytes_and_can_be_raised(liar):
    liar.answer = answers.gzip_bomb(20)  # 20 MB decoded: over 8, under 32
    assert "max_body_mb" in str(limit_error(call(liar.base_url, replace(DEFAULT_LIMITS, max_body_mb=8)), "max_body_mb"))
    result = call(liar.base_url)  # under the default the body is read, and is simply not a completion
    assert isinstance(result, ProviderError) and not isinstance(result, ProviderLimitExceeded)


def test_a_48_mb_line_without_end_stops_at_the_event_limit_in_seconds(liar):
    liar.answer = answers.endless_line(48)
    started = time.perf_counter()
    grown, result = peak_growth_mib(lambda: call(liar.base_url))
    limit_error(result, "max_event_mb")
    assert time.perf_counter() - started < 10
    assert grown < MEMORY_BOUND_MIB, f"peak memory grew by {grown:.0f} MiB"


def test_a_48_mb_line_is_read_in_linear_time_when_the_limit_allows_it(liar):
    liar.answer = answers.endless_line(48)
    started = time.perf_counter()
    result = call(liar.base_url, replace(DEFAULT_LIMITS, max_event_mb=64, max_body_mb=64))
    assert isinstance(result, ProviderError) and "ended before the reply was complete" in str(result)
    assert time.perf_counter() - started < 10  # quadratic parsing took 25 s


def test_the_sse_parser_is_linear_in_tiny_pieces():
    parser = SseParser()
    text = "data: " + "x" * 2_000_000 + "\n\n"
    started = time.perf_counter()
    events = [e for i in range(0, len(text), 7) for e in parser.feed(text[i : i + 7])]
    assert len(events) == 1 and len(events[0].data) == 2_000_000
    assert time.perf_counter() - started < 5


def test_reply_text_past_its_limit_ends_the_call(liar):
    piece = chunk({"content": "y" * 60_000})
    liar.answer = answers.events(*[piece] * 40)  # 2.4 MB of stray text
    limit_error(call(liar.base_url, replace(DEFAULT_LIMITS, max_reply_mb=1)), "max_reply_mb")


def test_tool_call_arguments_past_the_limit_end_the_call(liar):
    head = chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "respond", "arguments": ""}}]})
    more = chunk({"tool_calls": [{"index": 0, "function": {"arguments": "z" * 50_000}}]})
    liar.answer = answers.events(head, *[more] * 50)
    limit_error(call(liar.base_url, replace(DEFAULT_LIMITS, max_reply_mb=1)), "max_reply_mb")


def test_many_small_argument_pieces_are_accumulated_in_linear_time(liar):
    head = chunk(
        {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "respond", "arguments": '{"content": "'}}]}
    )
    more = chunk({"tool_calls": [{"index": 0, "function": {"arguments": "w" * 20}}]})
    tail = chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}, "tool_calls")
    liar.answer = answers.events(head, *[more] * 100_000, tail)  # 2 MB of arguments in 100,000 pieces
    seen: list[int] = []

    async def main():
        provider = OpenAIProvider(ProviderConfig("liar", api_base=liar.base_url, default_model="m"), "m")
        try:
            on_delta = lambda e: seen.append(len(e.get("arguments", "")))  # noqa: E731
            return await provider.complete(ModelRequest("s", [], TOOLS, "s", "m"), on_delta=on_delta)
        finally:
            await provider.aclose()

    started = time.perf_counter()
    result = asyncio.run(main())
    assert time.perf_counter() - started < 20
    assert len(result.message["content"][0]["input"]["content"]) == 2_000_000
    assert seen[-1] == 2_000_000 + len('{"content": ""}')  # a live view is shown the arguments whole at the end
    assert len(seen) < 5000  # ... but not 100,000 copies of a growing text on the way


# -- time -------------------------------------------------------------------------------------------------
def test_an_endless_stream_ends_at_the_total_time_limit(liar):
    liar.answer = answers.endless_stream()
    started = time.perf_counter()
    result = call(liar.base_url, replace(DEFAULT_LIMITS, total_timeout_s=1.5))
    limit_error(result, "total_timeout_s")
    assert time.perf_counter() - started < 6


@pytest.mark.parametrize("stream", [True, False])
def test_a_silent_provider_ends_at_the_idle_limit(liar, stream):
    liar.answer = answers.silent(stream=stream)
    started = time.perf_counter()
    limit_error(call(liar.base_url, replace(DEFAULT_LIMITS, idle_timeout_s=0.5)), "idle_timeout_s")
    assert time.perf_counter() - started < 5


def test_a_header_line_without_end_is_refused(liar):
    def answer(h):
        h.wfile.write(b"HTTP/1.1 200 OK\r\nX-Lie: ")
        for _ in range(200):
            h.wfile.write(b"h" * 2**16)

    liar.answer = answer
    started = time.perf_counter()
    result = call(liar.base_url)
    assert isinstance(result, ProviderError) and "could not talk to" in str(result)
    assert time.perf_counter() - started < 5 and len(str(result)) < 1000


# -- error bodies -----------------------------------------------------------------------------------------
def test_a_60_mb_error_body_is_kept_as_a_bounded_excerpt(liar):
    liar.answer = answers.huge_error(60)
    started = time.perf_counter()
    grown, result = peak_growth_mib(lambda: call(liar.base_url))
    assert isinstance(result, ProviderError) and result.status == 500
    assert len(str(result)) < MAX_ERROR_TEXT + 400 and len(result.server_message) < MAX_ERROR_TEXT + 200
    assert "HTTP 500" in str(result) and "AAAA" in str(result) and "not read" in str(result)
    assert grown < 16, f"peak memory grew by {grown:.0f} MiB"
    assert time.perf_counter() - started < 10


def test_a_60_mb_error_in_a_turn_is_not_kept_whole_in_the_recording(tmp_path, liar):
    liar.answer = answers.huge_error(60)
    agent = cireil.load(turn_agent(tmp_path, liar.base_url))
    try:
        with pytest.raises(ProviderError) as info:
            agent.turn("hi")
        assert len(str(info.value)) < MAX_ERROR_TEXT + 400
    finally:
        agent.close()
    for db in tmp_path.rglob("*.db"):
        with sqlite3.connect(db) as conn:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    assert all(len(v) < 200_000 for v in row if isinstance(v, str | bytes)), (db.name, table)


def test_a_huge_error_event_in_a_stream_is_excerpted(liar):
    liar.answer = answers.events({"error": {"message": "E" * 3_000_000}})
    result = call(liar.base_url)
    assert isinstance(result, ProviderError) and len(str(result)) < MAX_ERROR_TEXT + 400


# -- shapes ---------------------------------------------------------------------------------------------------
MALFORMED = {
    "choices is a string": {"choices": "abc"},
    "choices holds a number": {"choices": [5]},
    "delta is a string": {"choices": [{"delta": "hello"}]},
    "tool_calls is a string": {"choices": [{"delta": {"tool_calls": "x"}}]},
    "a tool call is a list": {"choices": [{"delta": {"tool_calls": [["x"]]}}]},
    "index is a string": {"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {"name": "respond"}}]}}]},
    "index is a list": {"choices": [{"delta": {"tool_calls": [{"index": [0], "function": {"name": "respond"}}]}}]},
    "name is a number": {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 5}}]}}]},
    "function is a string": {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "respond"}]}}]},
    "arguments are a list": {
        "choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "r", "arguments": [1]}}]}}]
    },
    "id is a number": {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": 7, "function": {"name": "r"}}]}}]},
    "finish_reason is a list": {"choices": [{"delta": {}, "finish_reason": ["stop"]}]},
}


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("payload", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_shapes_end_the_call_with_a_provider_error(liar, payload, stream):
    if stream:
        liar.answer = answers.events(payload, chunk({}, "tool_calls"))
    else:
        body = {k: ([{**c, "message": c.pop("delta")} if isinstance(c, dict) and "delta" in c else c for c in v]
                    if k == "choices" and isinstance(v, list) else v) for k, v in payload.items()}  # fmt: skip
        liar.answer = answers.json_body(body)
    result = call(liar.base_url)
    assert type(result) is ProviderError, repr(result)
    assert "wrong shape" in str(result) and "\n" not in str(result)


def test_a_malformed_reply_in_a_turn_is_one_provider_error(tmp_path, liar):
    liar.answer = answers.events({"choices": [{"delta": "hello"}]}, chunk({}, "stop"))
    agent = cireil.load(turn_agent(tmp_path, liar.base_url))
    try:
        with pytest.raises(ProviderError, match="wrong shape: a choice's 'delta' is a string"):
            agent.turn("hi")
    finally:
        agent.close()


@pytest.mark.parametrize(
    "event",
    [
        {"type": "content_block_start", "index": "a", "content_block": {"type": "text"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": 5}},
        {"type": "content_block_delta", "index": [1], "delta": {"type": "text_delta", "text": "x"}},
        {"type": "message_delta", "delta": "stop"},
        {"type": "message_delta", "delta": {"stop_reason": {"x": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": 3, "name": "r"}},
    ],
)
def test_malformed_anthropic_events_end_the_call_with_a_provider_error(liar, event):
    liar.answer = answers.events(event, {"type": "message_stop"}, done=False)
    result = call(liar.base_url, provider_class=AnthropicProvider)
    assert type(result) is ProviderError and "wrong shape" in str(result), repr(result)


def test_malformed_codex_items_are_reported_not_raised_as_type_errors():
    from cireil.runtime.engine.httpcall import _shielded
    from cireil.runtime.engine.replytypes import MalformedReply

    for event in (
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "arguments": 5}},
        {"type": "response.completed", "response": {"output": "x"}},
    ):
        with pytest.raises(MalformedReply):
            _shielded(_Items(None).event, event)
    items = _Items(None)
    _shielded(
        items.event,
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "name": 5}},
    )
    items.done = True
    with pytest.raises(MalformedReply):
        _shielded(items.finish, {})


# -- usage ----------------------------------------------------------------------------------------------------
def test_usage_counts_that_are_not_counts_are_ignored_with_a_note(tmp_path, liar):
    usage = {"prompt_tokens": "12", "completion_tokens": -3, "total_tokens": 7, "cached": True,
             "prompt_tokens_details": {"cached_tokens": 10**30}, "reasoning": 2.0}  # fmt: skip
    liar.answer = answers.events(*RESPOND, {"choices": [], "usage": usage})
    agent = cireil.load(turn_agent(tmp_path, liar.base_url))
    try:
        events: list[dict] = []
        outcome = agent.turn("hi", on_event=events.append)
        assert outcome.ended == "respond"
        assert outcome.usage == {"total_tokens": 7, "reasoning": 2}
        notes = [e["text"] for e in events if e["type"] == "notice" and "usage" in e["text"]]
        assert len(notes) == 1 and "prompt_tokens='12'" in notes[0] and "completion_tokens=-3" in notes[0]
        turns = agent.turns()
        assert turns and turns[-1].steps[0].reply["usage"] == {"total_tokens": 7, "reasoning": 2}
        assert turns[-1].usage.get("total_tokens") == 7
    finally:
        agent.close()


def test_usage_of_the_wrong_shape_in_anthropic_and_codex_is_dropped():
    from cireil.runtime.engine.anthropic import _Blocks

    blocks = _Blocks(None)
    blocks.event({"type": "message_start", "message": {"usage": {"input_tokens": "9", "output_tokens": 4}}})
    assert blocks.usage == {"completion_tokens": 4, "total_tokens": 4} and blocks.notes
    items = _Items(None)
    items.event({"type": "response.completed", "response": {"usage": {"input_tokens": -1, "total_tokens": "x"}}})
    assert items.usage == {"total_tokens": 0} and items.notes


# -- the model list ---------------------------------------------------------------------------------------
def test_a_gzip_bomb_as_the_model_list_stays_small(liar):
    liar.models_answer = answers.gzip_bomb(300)
    provider = ProviderConfig("liar", api_base=liar.base_url, default_model="m")
    grown, listing = peak_growth_mib(lambda: asyncio.run(fetch_models(provider)))
    assert "larger than 16 MB" in listing.error
    assert grown < MEMORY_BOUND_MIB


# -- configuration ----------------------------------------------------------------------------------------
def write_limits(agent: Path, text: str) -> None:
    (agent / "config" / "cireil.toml").write_text(text)


def test_limits_come_from_cireil_toml_and_a_bad_one_names_its_line(tmp_path, liar):
    agent_dir = turn_agent(tmp_path, liar.base_url)
    write_limits(agent_dir, "[limits]\ntotal_timeout_s = 1\n")
    liar.answer = answers.endless_stream()
    agent = cireil.load(agent_dir)
    try:
        started = time.perf_counter()
        with pytest.raises(ProviderLimitExceeded, match=r"took longer than 1 s.*limits\.total_timeout_s"):
            agent.turn("hi")
        assert time.perf_counter() - started < 5
        assert liar.requests == 1  # a limit is not retried
        write_limits(agent_dir, '[limits]\nmax_steps = 0\nmax_body_mb = "big"\n')
        with pytest.raises(ConfigError) as info:
            agent.turn("again")
        assert sorted(str(info.value).splitlines()) == [
            "config/cireil.toml:2: 'limits.max_steps' must be a whole number from 1 to 100000, not 0",
            "config/cireil.toml:3: 'limits.max_body_mb' must be a number of MB from 0.001 to 4096, not \"big\"",
        ]
        assert liar.requests == 1  # refused before anything was sent
        write_limits(agent_dir, '[prices.m]\ninput = "x"\n')  # the recorder's part: turns go on
        liar.answer = answers.events()
        assert agent.turn("and again").ended == "respond"
    finally:
        agent.close()


# -- steps ------------------------------------------------------------------------------------------------
def busy_model() -> ScriptedLLM:
    return ScriptedLLM(default=reply.tool_calls(("session-info", {})))  # never ends the turn


def test_a_model_calling_tools_forever_stops_at_max_steps(tmp_path):
    with busy_model() as llm:
        agent_dir = turn_agent(tmp_path, llm.base_url)
        write_limits(agent_dir, "[limits]\nmax_steps = 4\n")
        agent = cireil.load(agent_dir)
        try:
            with pytest.raises(StepLimitReached) as info:
                agent.turn("go")
            message = str(info.value)
            assert "stopped after 4 model calls" in message and "limits.max_steps in config/cireil.toml" in message
            assert isinstance(info.value, CireilError) and "\n" not in message
            assert info.value._render_traceback_() == [f"StepLimitReached: {message}"]  # one line in a cell
            assert len(llm.requests) == 4
            # a turn stopped so is a failed turn: nothing of it is stored (the turn recorder keeps its steps)
            assert agent.session.history == []
            recorded = agent.turns()[-1]
            assert (recorded.ended, recorded.step_count) == ("error", 4)
        finally:
            agent.close()


def test_the_default_step_limit_is_50():
    assert DEFAULT_LIMITS.max_steps == 50


CRON = """\
[[jobs]]
id = "loop"
prompt = "Loop."
schedule = { every = 3600 }
target = "internal:inbox"
"""


@pytest.mark.parametrize("execution", ["isolated", "main"])
def test_cron_turns_are_bounded_by_max_steps(tmp_path, execution):
    from cireil.runtime.jobs.job_runner import JobRunner

    with busy_model() as llm:
        agent_dir = turn_agent(tmp_path, llm.base_url)
        write_limits(agent_dir, "[limits]\nmax_steps = 3\n")
        cron = CRON if execution == "isolated" else CRON + 'execution = "main"\n'
        (agent_dir / "config" / "cron.toml").write_text(cron)
        agent = cireil.load(agent_dir)
        try:
            RUNTIME.run(agent.jobs.aclose())
            runner = JobRunner(agent.engine, manual=True)
            runner.reload()
            record = RUNTIME.run(runner.run(runner.job("loop")))
            assert record.ok is False and "limits.max_steps" in record.text, record.text
            assert len(llm.requests) == 3
        finally:
            agent.close()


def test_heartbeat_turns_are_bounded_by_max_steps(tmp_path):
    from cireil.runtime.jobs.job_runner import JobRunner

    with busy_model() as llm:
        agent_dir = turn_agent(tmp_path, llm.base_url)
        write_limits(agent_dir, "[limits]\nmax_steps = 2\n")
        (agent_dir / "tasks" / "HEARTBEAT.md").write_text("Water the plants.\n")
        (agent_dir / "config" / "heartbeat.toml").write_text(
            'enabled = true\ninterval = 600\ntarget = "internal:desk"\n'
        )
        agent = cireil.load(agent_dir)
        try:
            RUNTIME.run(agent.jobs.aclose())
            runner = JobRunner(agent.engine, manual=True)
            runner.reload()
            record = RUNTIME.run(runner.pulse())
            assert record.ok is False and "stopped after 2 model calls" in record.text, record.text
            assert len(llm.requests) == 2
        finally:
            agent.close()


def test_dry_run_checks_the_limits(tmp_path):
    agent_dir = turn_agent(tmp_path, "http://127.0.0.1:9/v1")
    write_limits(agent_dir, "[limits]\nidle_timeout_s = -1\n[prices.m]\ninput = 1\n")
    issues = sorted((i.severity, str(i)) for i in cireil.dry_run(agent_dir).issues if i.file == "config/cireil.toml")
    assert issues == [
        ("error", "config/cireil.toml:2: 'limits.idle_timeout_s' must be a number from 0.01 to 86400, not -1"),
        ("warning", "config/cireil.toml:3: warning: 'prices.m.output' is required"),
    ]


def test_a_provider_error_shown_in_a_cell_has_its_control_characters_made_visible():
    from cireil.runtime.engine.replytypes import ProviderError

    shown = "".join(ProviderError("HTTP 500: \x1b]52;c;ZXZpbA==\x07 \x1b[2J boom")._render_traceback_())
    assert "\x1b" not in shown and "\x07" not in shown
    assert "boom" in shown
