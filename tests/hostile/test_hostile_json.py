"""JSON from others with hostile depth: a clear error at the door, never a RecursionError later."""

from __future__ import annotations

import json
import time

import pytest

from cireil.runtime.base import jsonbound
from cireil.runtime.engine.openai import parse_arguments
from cireil.runtime.engine.partialjson import partial_string_field

BOMB = "[" * 100_000 + "]" * 100_000
GENEROUS_S = 10.0


def test_bounded_loads_refuses_depth_bombs_with_a_value_error():
    for text in (BOMB, '{"a":' * 5000 + "1" + "}" * 5000, "[" * 101 + "]" * 101):
        with pytest.raises(ValueError, match="nested deeper than 100 levels"):
            jsonbound.loads(text)
    assert jsonbound.loads("[" * 100 + "]" * 100) is not None  # at the limit: fine
    assert jsonbound.loads('{"a": [1, {"b": "c"}]}') == {"a": [1, {"b": "c"}]}


def test_too_deep_walks_without_recursion():
    value: object = 1
    for _ in range(50_000):
        value = [value]
    assert jsonbound.too_deep(value)
    assert not jsonbound.too_deep([[1], {"a": [2]}], 3)


def test_model_arguments_nested_too_deep_are_a_validation_failure_not_a_crash():
    args, raw = parse_arguments('{"path": ' + BOMB + "}")
    assert args == {} and raw is not None  # the turn reports "not valid JSON" to the model and goes on


def test_partial_json_of_a_deep_stream_is_linear():
    text = '{"other": ' + "[" * 200_000 + ', "content": "hi'
    started = time.monotonic()
    assert partial_string_field(text, "content") is None  # the deep value never closed: content not at top level
    closed = '{"other": ' + BOMB + ', "content": "hel'
    assert partial_string_field(closed, "content") == "hel"
    assert time.monotonic() - started < GENEROUS_S


def test_a_deep_value_still_encodes_for_the_next_request():
    value = jsonbound.loads("[" * 100 + "]" * 100)
    json.dumps(value)  # what the provider does with a tool result: below the limit it always fits


class _DeepJson:
    """A provider on loopback whose every answer is JSON nested far past the bound (plain http.server)."""

    def __enter__(self):
        import http.server
        import threading

        bomb = b"[" * 100_000 + b"]" * 100_000

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(bomb)))
                self.end_headers()
                self.wfile.write(bomb)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_an_anthropic_provider_and_a_model_list_answering_a_depth_bomb_fail_cleanly():
    import asyncio

    from cireil.runtime.config.engine_config import ProviderConfig
    from cireil.runtime.engine.anthropic import AnthropicProvider
    from cireil.runtime.engine.models import fetch_models
    from cireil.runtime.engine.openai import ModelRequest, ProviderError
    from cireil.runtime.sessions import messages as M

    with _DeepJson() as server:
        claude = ProviderConfig("claude", kind="anthropic", api_base=server.base_url, default_model="c")
        request = ModelRequest("s", [M.user_message("hi")], [], "sid", "c")

        async def turn():
            provider = AnthropicProvider(claude, "c")
            try:
                return await provider.complete(request)
            finally:
                await provider.aclose()

        with pytest.raises(ProviderError, match="not JSON"):  # the provider's failure, not a RecursionError
            asyncio.run(turn())
        listing = asyncio.run(fetch_models(ProviderConfig("p", api_base=server.base_url, default_model="m")))
        assert listing.error is not None and "did not answer with a model list" in listing.error
