"""Hand-edited and planted configuration files: each is refused by name (and line), none is silently ignored.

A config file that is a directory, a FIFO or a symlink to /dev/zero; integer keys written as TOML floats or
booleans; files far over the size cap, or just under it and full of unknown keys or strings; a runtime root's
config/system.toml with a zone that does not exist; an MCP server listing one tool whose schema is not an
object or nests 900 levels deep among good tools.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

import cireil
from cireil.runtime.agent_config import dry_run
from cireil.runtime.config.checker import MAX_UNKNOWN
from cireil.runtime.files.safefs import CONFIG_LIMIT
from conftest import make_agent
from mcp_peers.launch import mcp_toml
from mcp_peers.rogue import TOOL, Rogue, _Handler

GENEROUS_S = 20.0  # a megabyte of TOML is read in about a second here


def plant(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)


AGENT_FILES = [
    "config/engine.toml",
    "config/tools.toml",
    "config/sandbox.toml",
    "config/mcp.toml",
    "config/conditions.toml",
    "config/cron.toml",
    "config/heartbeat.toml",
]


@pytest.mark.parametrize("kind", ["directory", "fifo", "zero"])
@pytest.mark.parametrize("rel", AGENT_FILES)
def test_a_config_file_that_is_not_a_regular_file_is_named_by_dry_run(tmp_path, rel, kind):
    agent = make_agent(tmp_path)
    plant(agent / rel, kind)
    started = time.monotonic()
    shown = [str(i) for i in dry_run(agent).issues]
    assert time.monotonic() - started < GENEROUS_S  # /dev/zero is never read to its end
    assert any(line.startswith(f"{rel}: ") and "not a regular file" in line for line in shown), shown


@pytest.mark.parametrize("kind", ["directory", "fifo", "zero"])
def test_engine_toml_that_is_not_a_regular_file_is_a_warning_at_load(tmp_path, kind):
    agent_dir = make_agent(tmp_path)
    plant(agent_dir / "config" / "engine.toml", kind)
    agent = cireil.load(agent_dir)  # the tools work without a provider
    try:
        warnings = [str(w) for w in agent.warnings]
        assert any(w.startswith("config/engine.toml: warning: not a regular file") for w in warnings), warnings
    finally:
        agent.close()
    errors = [str(e) for e in dry_run(agent_dir).errors]
    assert sum("config/engine.toml" in e for e in errors) == 1, errors  # dry-run says it once, as an error


def runtime_root(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    agent = make_agent(root / "agents", name="demo")
    (root / "config").mkdir()
    return root, agent


@pytest.mark.parametrize(
    ("text", "line"),
    [('\ntimezone = "Mars/Olympus_Mons"\n', 2), ("timezone = 5\n", 1), ('zone = "UTC"\n', 1)],
)
def test_dry_run_and_load_check_the_runtime_roots_system_toml(tmp_path, text, line):
    root, agent_dir = runtime_root(tmp_path)
    (root / "config" / "system.toml").write_text(text)
    report = dry_run(agent_dir)
    errors = [str(e) for e in report.errors]
    assert any(e.startswith(f"{root / 'config' / 'system.toml'}:{line}: ") for e in errors), errors
    agent = cireil.load(agent_dir)
    try:
        assert any(f"system.toml:{line}: warning: " in str(w) for w in agent.warnings)
    finally:
        agent.close()


@pytest.mark.parametrize("kind", ["directory", "fifo", "zero"])
def test_a_system_toml_that_is_not_a_regular_file_is_named(tmp_path, kind):
    root, agent_dir = runtime_root(tmp_path)
    plant(root / "config" / "system.toml", kind)
    errors = [str(e) for e in dry_run(agent_dir).errors]
    assert any(e.startswith(f"{root / 'config' / 'system.toml'}: ") for e in errors), errors


def test_a_good_system_toml_passes(tmp_path):
    root, agent_dir = runtime_root(tmp_path)
    (root / "config" / "system.toml").write_text('timezone = "Europe/Berlin"\n')
    assert not [e for e in dry_run(agent_dir).errors if "system.toml" in str(e)]


# -- integers are integers ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["1e9", "1.0", "16384.0", "true", "nan", "inf"])
def test_an_integer_key_written_as_a_float_or_boolean_is_refused_at_its_line(tmp_path, value):
    agent = make_agent(tmp_path, f"list-dir = true\n\n\n[exec]\ninlineThresholdBytes = {value}\n")
    errors = [str(e) for e in dry_run(agent).errors]
    assert any(e.startswith("config/tools.toml:5: 'exec.inlineThresholdBytes' must be a whole number") for e in errors)


@pytest.mark.parametrize(
    ("rel", "text", "line"),
    [
        ("config/mcp.toml", '[servers.a]\nurl = "http://127.0.0.1:9/mcp"\ntimeout = 5000.0\n', 3),
        (
            "config/engine.toml",
            '[p]\napiBase = "http://127.0.0.1:9/v1"\ndefaultModel = "m"\nisGlobalDefault = true\nmaxTurns = 3e1\n',
            5,
        ),
        ("config/cron.toml", '[[jobs]]\nid = "a"\nprompt = "p"\nschedule = { every = 3600.0 }\n', 4),
    ],
)
def test_every_integer_key_refuses_a_float(tmp_path, rel, text, line):
    agent = make_agent(tmp_path)
    (agent / rel).write_text(text)
    shown = [str(i) for i in dry_run(agent).issues]
    assert any(s.startswith(f"{rel}:{line}: ") and "whole number" in s for s in shown), shown


def test_an_integer_key_still_takes_an_integer(tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\n\n\n[exec]\ninlineThresholdBytes = 1_000_000\n")
    assert not [e for e in dry_run(agent).errors if "inlineThresholdBytes" in str(e)]


# -- size -----------------------------------------------------------------------------------------------
def write_big(path: Path, size: int, kind: str) -> None:
    with open(path, "w") as f:
        if kind == "keys":
            n = 0
            while f.tell() < size:
                f.write(f"stray_key_{n} = true\n")
                n += 1
        else:
            f.write('list-dir = true\nnote = "' + "a" * size + '"\n')


@pytest.mark.parametrize("kind", ["keys", "string"])
def test_a_config_file_over_the_cap_is_refused_by_name_at_once(tmp_path, kind):
    agent = make_agent(tmp_path)
    write_big(agent / "config" / "tools.toml", 9 * 2**20 if kind == "keys" else 30 * 2**20, kind)
    started = time.monotonic()
    errors = [str(e) for e in dry_run(agent).errors]
    assert time.monotonic() - started < GENEROUS_S
    assert any(e.startswith("config/tools.toml: file is larger than") for e in errors), errors


def test_unknown_keys_just_under_the_cap_are_listed_up_to_a_limit_and_counted(tmp_path):
    agent = make_agent(tmp_path)
    write_big(agent / "config" / "tools.toml", CONFIG_LIMIT - 100, "keys")
    started = time.monotonic()
    errors = [str(e) for e in dry_run(agent).errors]
    assert time.monotonic() - started < GENEROUS_S
    tools = [e for e in errors if e.startswith("config/tools.toml:")]
    assert len(tools) == MAX_UNKNOWN + 1, len(tools)
    assert tools[0].startswith("config/tools.toml:1: unknown tool 'stray_key_0'")
    assert f"more unknown keys after the first {MAX_UNKNOWN}" in tools[-1]


@pytest.mark.parametrize(
    "body",
    [
        'list-dir = true\nnote = "' + "a" * (CONFIG_LIMIT - 100) + '"\n',
        "list-dir = true\nnote = [" + '"a",' * ((CONFIG_LIMIT - 100) // 4) + "]\n",
        "list-dir = true\nnote = [" + "'a'," * ((CONFIG_LIMIT - 100) // 4) + "]\n",
    ],
    ids=["one-string", "many-strings", "many-literals"],
)
def test_a_megabyte_of_strings_is_read_in_linear_time(tmp_path, body):
    agent = make_agent(tmp_path)
    (agent / "config" / "tools.toml").write_text(body)
    started = time.monotonic()
    errors = [str(e) for e in dry_run(agent).errors]
    assert time.monotonic() - started < GENEROUS_S / 4
    assert len(errors) == 1 and errors[0].startswith("config/tools.toml:2: unknown tool 'note'"), errors


def test_a_number_of_thousands_of_digits_names_its_line(tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\n\n[exec]\ntimeout = " + "9" * 5000 + "\n")
    errors = [str(e) for e in dry_run(agent).errors]
    assert any(e.startswith("config/tools.toml:4: invalid TOML: a number too long") for e in errors), errors


# -- MCP: one bad tool, not the whole server ---------------------------------------------------------
def deep_schema(levels: int) -> dict:
    schema: dict = {"type": "object"}
    top = schema
    for _ in range(levels):
        inner: dict = {"type": "object"}
        schema["properties"] = {"a": inner}
        schema = inner
    return top


class _Mixed(_Handler):
    def _mixed(self, body: dict) -> None:
        if body["method"] == "tools/list":
            tools = [
                TOOL,
                {"name": "stringy", "inputSchema": {"type": "string"}},
                {"name": "listy", "inputSchema": [{"type": "object"}]},
                {"name": "numbered", "inputSchema": 7},
                {"name": "deep", "description": "900 levels", "inputSchema": deep_schema(450)},
                {"inputSchema": {"type": "object"}},
                {"name": "last", "inputSchema": {"type": "object", "properties": {}}},
            ]
            data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"tools": tools}})
            abyss = '{"name":"abyss","inputSchema":' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}"
            data = data.replace('{"name": "last"', abyss + ', {"name": "last"')  # beyond what json.dumps nests
            self._send(200, data.encode(), "application/json")
        elif not self._standard(body):
            self._json(body, {"content": [{"type": "text", "text": "echoed " + body["params"]["name"]}]})


class MixedServer(Rogue):
    def __init__(self) -> None:  # Rogue's bookkeeping with this handler
        ThreadingHTTPServer.__init__(self, ("127.0.0.1", 0), _Mixed)
        self.received = []
        self.sessions = 0
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def mixed():
    server = MixedServer()
    yield server
    server.stop()


def test_one_bad_mcp_tool_is_dropped_and_named_while_the_others_work(tmp_path, mixed):
    agent_dir = make_agent(tmp_path, "list-dir = true\nmcp__m__echo = true\nmcp__m__last = true\n")
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"m": mixed.url("/mixed")}))
    report = dry_run(agent_dir)
    assert report.ok, [str(e) for e in report.errors]
    warnings = [str(w) for w in report.warnings]
    for name, why in [
        ("stringy", "inputSchema of type 'string'"),
        ("listy", "not a JSON Schema object but list"),
        ("numbered", "not a JSON Schema object but int"),
        ("deep", "nested deeper than 100 levels"),
        ("abyss", "nested deeper than 100 levels"),
    ]:
        assert any(
            w.startswith("config/mcp.toml:1: warning: server 'm': tool") and f"'{name}'" in w and why in w
            for w in warnings
        ), (name, warnings)
    assert any("server 'm' lists a tool without a name" in w for w in warnings)
    agent = cireil.load(agent_dir)
    try:
        assert agent.call("mcp__m__echo", x=1).success
        assert agent.call("mcp__m__last").success
    finally:
        agent.close()


def test_a_bad_mcp_tool_enabled_in_tools_toml_is_an_unknown_tool_with_the_reason_in_a_warning(tmp_path, mixed):
    agent_dir = make_agent(tmp_path, "list-dir = true\nmcp__m__deep = true\n")
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"m": mixed.url("/mixed")}))
    report = dry_run(agent_dir)
    assert any("mcp__m__deep" in str(e) and e.file == "config/tools.toml" for e in report.errors)
    assert any("'deep'" in str(w) and "nested deeper" in str(w) for w in report.warnings)
