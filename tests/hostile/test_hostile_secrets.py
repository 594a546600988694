"""Secrets masked everywhere they can appear (issue 29, "Secrets leak").

A provider on loopback that echoes the Authorization header and the custom headers into its 401 body, an
apiBase carrying `user:password@` that points at a closed port, customHeaders with a secret value, an
apiKey read from the environment: no configured secret may appear in any file cireil writes in the agent
directory (recordings, sessions, exports), nor in any view (`%cireil prompt`, `%cireil models`, a failed
turn's cell, dry-run), nor in an error. Every secret is fresh per test, so one test's registration can
never make another pass.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import cireil
from cireil.render.prompt import PromptView
from cireil.runtime.base.secrets import MASK, MIN_SECRET_CHARS, Secrets, mask_url
from conftest import make_agent
from magicshell import loaded, run
from turnkit import turn_agent


def fresh(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(8)}"


class EchoServer:
    """Answers every request 401, quoting back the Authorization header and every X-* header it got."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _echo(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                owner.seen.append(headers)
                sent = {k: v for k, v in headers.items() if k == "authorization" or k.startswith("x-")}
                body = json.dumps({"error": {"message": f"Invalid API key. You sent: {sent}"}}).encode()
                self.send_response(401)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = _echo

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def echo():
    server = EchoServer()
    try:
        yield server
    finally:
        server.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leaks(agent: Path, values: list[str]) -> list[str]:
    """Every file cireil wrote in the agent directory (config/ is the person's own) holding one of `values`,
    as bytes in any of the forms a secret takes on disk."""
    forms = [f.encode() for v in values for f in (v, json.dumps(v)[1:-1])]
    found = []
    for path in agent.rglob("*"):
        if path.is_file() and "config" not in path.relative_to(agent).parts:
            data = path.read_bytes()
            found += [f"{path.relative_to(agent)}: {f.decode()}" for f in forms if f in data]
    return found


def shown(text: object, values: list[str]) -> list[str]:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return [v for v in values if v in text]


# -- the Agent API -------------------------------------------------------------------------------------------


def test_a_key_the_provider_echoes_in_a_401_is_in_no_error_recording_or_file(tmp_path, echo, monkeypatch):
    key, env_key, header = fresh("sk-hostile"), fresh("sk-from-env"), fresh("hdr-secret")
    monkeypatch.setenv("CIREIL_HOSTILE_SECRET_KEY", env_key)
    agent_dir = turn_agent(
        tmp_path,
        echo.base_url,
        keys=f'["{key}", {{ env = "CIREIL_HOSTILE_SECRET_KEY" }}]',
        extra=f'maxGenerationRetries = 1\n[local.customHeaders]\nX-Tenant-Secret = "{header}"\n',
    )
    values = [key, env_key, header]
    events: list[dict] = []
    agent = cireil.load(agent_dir)
    try:
        with pytest.raises(Exception) as failed:
            agent.turn("hello", on_event=events.append)
        # the server did get (and echo) both keys of the pool and the header: the echo is real
        assert {h["authorization"] for h in echo.seen} == {f"Bearer {key}", f"Bearer {env_key}"}
        assert "Invalid API key" in str(failed.value) and MASK in str(failed.value)
        assert not shown(str(failed.value), values)
        retry = [e for e in events if e.get("type") == "retry"]
        end = [e for e in events if e.get("type") == "end"]
        assert retry and end and end[0]["outcome"].error
        assert not shown([e.get("reason") for e in retry], values)
        assert not shown(end[0]["outcome"].error, values)
        recorded = agent.turns()
        assert recorded, "the failed turn is recorded"
        assert recorded[-1].error and not shown(recorded[-1].error, values)
        assert not shown([repr(step) for t in recorded for step in t.steps], values)
        (tmp_path / "agent-out").mkdir()
        notebook = agent.export_notebook(None, tmp_path / "agent-out" / "turns.ipynb")
        assert not shown(notebook.read_text(), values)
        exported = agent.export_test(recorded[-1], tmp_path / "agent-out" / "test_turn.py")
        assert not shown(exported.read_text(), values)
    finally:
        agent.close()
    assert not leaks(agent_dir, values)
    assert not leaks(tmp_path / "agent-out", values)


def test_a_password_in_api_base_is_masked_when_the_host_cannot_be_reached(tmp_path):
    password = fresh("pw-hostile")
    url = f"http://alice:{password}@127.0.0.1:{closed_port()}/v1"
    agent_dir = turn_agent(tmp_path, url, extra="maxGenerationRetries = 1\n")
    agent = cireil.load(agent_dir)
    try:
        with pytest.raises(Exception) as failed:
            agent.turn("hello")
        message = str(failed.value)
        assert "could not talk to http://alice:" in message and f"alice:{MASK}@127.0.0.1" in message
        assert password not in message
        prepared = agent.prompt()
        assert password not in prepared.url and f"alice:{MASK}@" in prepared.url
        bundle = PromptView(prepared)._repr_mimebundle_()
        assert not shown(bundle["text/plain"], [password]) and not shown(bundle["text/html"], [password])
        assert agent.turns() and not shown(agent.turns()[-1].error, [password])
    finally:
        agent.close()
    assert not leaks(agent_dir, [password])


def test_custom_header_values_are_masked_in_the_prompt_view(tmp_path, llm):
    header = fresh("hdr-secret")
    agent_dir = turn_agent(tmp_path, llm.base_url, extra=f'[local.customHeaders]\nX-Org-Token = "{header}"\n')
    agent = cireil.load(agent_dir)
    try:
        prepared = agent.prompt()
        assert ("X-Org-Token", f"{MASK} ({len(header)} chars)") in prepared.headers
        bundle = PromptView(prepared)._repr_mimebundle_()
        for kind in ("text/plain", "text/html"):
            assert "X-Org-Token" in bundle[kind]
            assert header not in bundle[kind], kind
        assert "X-Org-Token" in repr(agent.engine.config()) and header not in repr(agent.engine.config())
    finally:
        agent.close()


def test_a_provider_that_echoes_the_key_in_its_reply_does_not_get_it_stored(tmp_path, llm):
    """A 200 reply whose text and tool arguments repeat the key: not kept in sessions.db nor the recording."""
    from cireil.testing.scripted_llm import reply

    key = fresh("sk-hostile")
    agent_dir = turn_agent(tmp_path, llm.base_url, keys=f'"{key}"')
    llm.script(
        reply.text(f"my key is {key}"),
        reply.tool_calls(("respond", {"message": f"the key you gave me is {key}"})),
    )
    agent = cireil.load(agent_dir)
    try:
        outcome = agent.turn("hello")
        assert outcome.ended == "respond"
        assert not shown(agent.session.history, [key])
        assert agent.turns() and not shown([repr(step) for step in agent.turns()[-1].steps], [key])
    finally:
        agent.close()
    assert not leaks(agent_dir, [key])


def test_dry_run_masks_credentials_it_quotes(tmp_path):
    password, query_key, mcp_header = fresh("pw-hostile"), fresh("qk-hostile"), fresh("mcp-secret")
    agent_dir = turn_agent(tmp_path, f"http://bob:{password}@127.0.0.1:{closed_port()}/v1?api_key={query_key}")
    (agent_dir / "config" / "mcp.toml").write_text(
        f'[servers.far]\nurl = "http://carol:{password}@127.0.0.1:{closed_port()}/mcp?token={query_key}"\n'
        f'headers = {{ X-Mcp-Key = "{mcp_header}" }}\n'
    )
    values = [password, query_key, mcp_header]
    report = cireil.dry_run(agent_dir)
    assert report.errors, "the ?query in apiBase is an error that quotes the URL"
    assert not shown([str(i) for i in report.issues], values)
    assert not shown(report.as_dict(), values)
    cli = subprocess.run(
        [sys.executable, "-m", "cireil", "dry-run", str(agent_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert "apiBase" in cli.stdout + cli.stderr
    assert not shown(cli.stdout + cli.stderr, values)


# -- the notebook ----------------------------------------------------------------------------------------------


def test_prompt_models_and_a_failed_cell_show_no_secret(tmp_path, shell, echo):
    key, header = fresh("sk-hostile"), fresh("hdr-secret")
    agent_dir = turn_agent(
        tmp_path,
        echo.base_url,
        keys=f'"{key}"',
        extra=f'maxGenerationRetries = 0\n[local.customHeaders]\nX-Tenant-Secret = "{header}"\n',
    )
    values = [key, header]
    loaded(shell, agent_dir)
    prompt = run(shell, "%cireil prompt")
    assert "X-Tenant-Secret" in prompt.text
    assert not shown(prompt.displayed, values)
    models = run(shell, "%cireil models")
    assert "401" in models.text  # the model list was asked for and refused, quoting the echo
    assert not shown(models.displayed, values) and not shown(models.text, values)
    cell = run(shell, "%%cireil_agent\nhello", ok=False)
    assert "Invalid API key" in cell.text + str(cell.error)
    assert not shown(cell.text + str(cell.error), values)
    assert not shown(cell.displayed, values)
    assert not leaks(agent_dir, values)


# -- the masking module ------------------------------------------------------------------------------------------


def test_known_values_urls_and_bearer_tokens_are_masked_in_free_text():
    s = Secrets()
    key, header = fresh("sk-unit"), 'va"lue\\with-quotes'
    s.add(key)
    s.add(header)
    s.add("short")  # below MIN_SECRET_CHARS: would garble every text
    s.add("not-needed")  # the default apiKey is no secret
    s.add("replay")  # a word: masking it would garble every text that uses it
    assert len("short") < MIN_SECRET_CHARS
    text = f"401: bad key {key}; header {json.dumps(header)}; short; not-needed; replay"
    masked = s.mask(text)
    assert key not in masked and json.dumps(header)[1:-1] not in masked
    assert "short" in masked and "not-needed" in masked and "replay" in masked
    assert s.mask("plain words stay") == "plain words stay"
    free = s.mask("GET https://u:pw9@h.example/x?api_key=abc&region=eu and Authorization: Bearer tok_12345678")
    assert "pw9" not in free and "abc" not in free and "tok_12345678" not in free and "region=eu" in free
    assert mask_url("https://u:p@h/v1?key=k&x=1") == f"https://u:{MASK}@h/v1?key={MASK}&x=1"
    data = {"a": [f"x {key} y", {"k": key}], "n": 3}
    assert key not in json.dumps(s.mask_data(data))
    assert s.mask_data({"n": 3, "b": ["ok"]}) == {"n": 3, "b": ["ok"]}


def test_masking_is_linear_in_the_text():
    s = Secrets()
    for n in range(200):
        s.add(f"secret-{n:04d}-" + "a" * 40)
    for hostile in ("a" * 4_000_000, "http://" + "b" * 4_000_000, "?" + "c" * 4_000_000, "bearer " * 600_000):
        started = time.perf_counter()
        s.mask(hostile)
        assert time.perf_counter() - started < 3.0


def test_an_mcp_header_the_server_echoes_is_masked_in_its_error_and_the_wire_log(tmp_path):
    from cireil.runtime.config.mcp_config import parse_mcp_config
    from cireil.runtime.config.tomlsource import read_toml
    from cireil.runtime.mcp.errors import McpHttpError, McpRemoteError
    from cireil.runtime.mcp.wirelog import WireLog

    header, password = fresh("mcp-secret"), fresh("pw-hostile")
    url = f"http://dora:{password}@127.0.0.1:1/mcp"
    agent = make_agent(tmp_path)
    (agent / "config" / "mcp.toml").write_text(f'[servers.far]\nurl = "{url}"\nheaders = {{ X-Team = "{header}" }}\n')
    servers, issues = parse_mcp_config(read_toml(agent, "config/mcp.toml"))
    assert servers and not [i for i in issues if i.severity == "error"]
    echoed = f"unknown team {header!r}"
    assert not shown(str(McpRemoteError(-32000, echoed)), [header])
    assert not shown(str(McpHttpError(f"HTTP 403 from {url}: {echoed}", 403)), [header, password])
    log = WireLog("far", url, ["X-Team"])
    exchange = log.begin("tools/call", json.dumps({"params": {"team": header}}).encode(), {"X-Team": header})
    exchange.answered(403, {"content-type": "application/json"})
    exchange.message(json.dumps({"error": {"message": echoed}}), "json")
    exchange.end(None, RuntimeError(f"refused at {url}: {echoed}"))
    assert not shown(log.entries(), [header, password])
