"""config/mcp.toml validation: server names, url, timeout, headers; servers are not available yet."""

from __future__ import annotations

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config.checker import label
from cireil.runtime.config.mcp_config import McpServer, parse_mcp_config, transport_owned
from cireil.runtime.config.tomlsource import TomlSource
from conftest import make_agent


def parse(text: str):
    return parse_mcp_config(TomlSource.parse("config/mcp.toml", text))


def messages(text: str) -> list[str]:
    return [str(i) for i in parse(text)[1]]


def server(name: str = "docs", url: str = "https://example.com/mcp", extra: str = "") -> str:
    return f'[servers.{name}]\nurl = "{url}"\n{extra}'


def test_no_file_no_servers():
    assert parse_mcp_config(None) == ([], [])
    assert parse("") == ([], [])


def test_valid_server_with_defaults():
    servers, issues = parse(server())
    assert issues == []
    assert servers == [McpServer("docs", "https://example.com/mcp", 60000, {})]


def test_valid_server_with_timeout_and_headers():
    text = server("my-server_2", "http://localhost:8080/mcp", "timeout = 1\n[servers.my-server_2.headers]\n")
    text += 'Authorization = "Bearer x"\nX-Custom = "1"\n'
    servers, issues = parse(text)
    assert issues == []
    assert servers == [
        McpServer("my-server_2", "http://localhost:8080/mcp", 1, {"Authorization": "Bearer x", "X-Custom": "1"})
    ]


@pytest.mark.parametrize("name", ["a__b", "__x", "x__", '"has space"', '"dot.ted"', '"é"', '"a/b"'])
def test_bad_server_names(name):
    text = f'# mcp\n[servers.{name}]\nurl = "https://example.com"\n'
    found = messages(text)
    assert len(found) == 1
    assert found[0].startswith("config/mcp.toml:2: server name ")
    assert "may use only ASCII letters, digits, '-' and '_', without '__'" in found[0]


@pytest.mark.parametrize("name", ["a", "A-b_c", "x1", "a_b-c", "_a", "-"])
def test_good_server_names(name):
    assert messages(server(name)) == []


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/mcp", "example.com/mcp", "https://", "file:///tmp/x", "ws://example.com", "/mcp"],
)
def test_url_must_be_http_or_https(url):
    assert messages(server(url=url)) == [
        f"config/mcp.toml:2: 'servers.docs.url' must be http:// or https://, not \"{url}\""
    ]


def test_url_required():
    assert messages("[servers.docs]\ntimeout = 5\n") == ["config/mcp.toml:1: 'servers.docs.url' is required"]
    assert messages("[servers.docs]\nurl = 5\n") == [
        "config/mcp.toml:2: 'servers.docs.url' must be an http:// or https:// URL, not 5"
    ]


@pytest.mark.parametrize("value", ["0", "-1", "1.5", '"60000"', "true"])
def test_timeout_positive_integer(value):
    [message] = messages(server(extra=f"timeout = {value}\n"))
    assert message.startswith(
        "config/mcp.toml:3: 'servers.docs.timeout' must be a whole number of milliseconds >= 1, not "
    )


def test_unknown_keys():
    assert messages(server(extra="retries = 3\n")) == [
        "config/mcp.toml:3: unknown key 'retries' in [servers.docs] (expected: url, timeout, headers)"
    ]
    assert messages('version = 1\n[servers.docs]\nurl = "https://x.org"\n') == [
        "config/mcp.toml:1: unknown key 'version' (expected: servers)"
    ]


def test_shape_errors():
    assert messages('servers = "x"\n') == [
        "config/mcp.toml:1: 'servers' must be a table of [servers.<name>] tables, not \"x\""
    ]
    assert messages('[[servers]]\nurl = "https://x.org"\n') == [
        "config/mcp.toml:1: 'servers' must be a table of [servers.<name>] tables, not an array"
    ]
    assert messages("[servers]\ndocs = 1\n") == ["config/mcp.toml:2: 'servers.docs' must be a table, not 1"]
    assert messages(server(extra='headers = "x"\n')) == [
        "config/mcp.toml:3: 'servers.docs.headers' must be a table, not \"x\""
    ]


TRANSPORT = [
    "Accept",
    "Content-Type",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Last-Event-ID",
    "Host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Origin",
    "Mcp-Anything",
    "mcp-custom",
]


@pytest.mark.parametrize("header", TRANSPORT + [h.lower() for h in TRANSPORT] + [h.upper() for h in TRANSPORT])
def test_transport_owned_headers_refused_case_insensitively(header):
    text = server(extra=f'[servers.docs.headers]\nAuthorization = "x"\n"{header}" = "v"\n')
    assert messages(text) == [
        f"config/mcp.toml:5: 'servers.docs.headers.{label(header)}' is owned by the MCP transport and cannot be set"
    ]
    assert transport_owned(header)


@pytest.mark.parametrize("header", ["Authorization", "X-Api-Key", "User-Agent", "X-Mcp-Thing", "Accept-Language"])
def test_other_headers_allowed(header):
    assert messages(server(extra=f'[servers.docs.headers]\n"{header}" = "v"\n')) == []
    assert not transport_owned(header)


def test_header_value_and_name_rules():
    assert messages(server(extra="[servers.docs.headers]\nX-N = 5\n")) == [
        "config/mcp.toml:4: 'servers.docs.headers.X-N' must be a one-line string, not 5"
    ]
    assert messages(server(extra='[servers.docs.headers]\nX-N = "a\\nb"\n')) == [
        "config/mcp.toml:4: 'servers.docs.headers.X-N' must be a one-line string"
    ]
    assert messages(server(extra='[servers.docs.headers]\n"Bad Name" = "v"\n')) == [
        "config/mcp.toml:4: 'servers.docs.headers.\"Bad Name\"' is not a valid header name"
    ]


def test_every_error_of_a_server_is_reported():
    text = '[servers."a__b"]\nurl = "ftp://x"\ntimeout = 0\nfoo = 1\n[servers."a__b".headers]\nHost = "h"\n'
    found = messages(text)
    assert sorted(int(m.split(":")[1]) for m in found) == [1, 2, 3, 4, 6]


DOWN = "http://127.0.0.1:9/mcp"  # nothing listens on the discard port: refused at once


def test_a_server_that_is_down_fails_load_and_dry_run_at_its_line(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "mcp.toml").write_text("# servers\n\n" + server("metacog", DOWN))
    report = cireil.dry_run(agent)
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(
        f"config/mcp.toml:3: server 'metacog': cannot initialize or list tools at {DOWN}: cannot reach {DOWN}"
    )
    with pytest.raises(ConfigError, match="server 'metacog': cannot initialize or list tools"):
        cireil.load(agent)


def test_mcp_tool_of_a_configured_server_in_tools_toml(tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\nmcp__metacog__feel = true\n")
    (agent / "config" / "mcp.toml").write_text(server("metacog", DOWN))
    found = [str(i) for i in cireil.dry_run(agent).errors]
    assert "config/tools.toml:2: unknown tool 'mcp__metacog__feel': server 'metacog' does not advertise it" in found


def test_empty_mcp_file_loads(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "mcp.toml").write_text("# no servers yet\n")
    assert cireil.load(agent).tools


def test_mcp_syntax_error_has_a_line(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "mcp.toml").write_text('[servers.docs]\nurl = "https://x.org\n')
    [issue] = cireil.dry_run(agent).errors
    assert (issue.file, issue.line) == ("config/mcp.toml", 2)


# -- mcp.toml holding secrets is a credential file (spec: "Protect this file as a credential") ---------
def _exposed(tmp_path, text: str, mode: int) -> list[str]:
    from cireil.runtime.agent import dry_run

    agent = make_agent(tmp_path)
    path = agent / "config" / "mcp.toml"
    path.write_text(text)
    path.chmod(mode)
    # the servers are never reached here: the port is closed, so load stops at discovery -- the warning
    # comes from reading the file, before any connection
    return [str(i) for i in dry_run(agent).warnings if i.file == "config/mcp.toml"]


SECRET = '[servers.s]\nurl = "http://127.0.0.1:9/mcp"\n[servers.s.headers]\nAuthorization = "Bearer x"\n'


def test_a_world_readable_mcp_toml_with_headers_is_warned_about(tmp_path):
    (warning,) = _exposed(tmp_path, SECRET, 0o644)
    assert warning.startswith(
        "config/mcp.toml: warning: holds credentials (server 's') but group and others can read it (mode 0644); "
        "protect it as a credential file: chmod 600 "
    )
    assert warning.endswith(str(tmp_path / "testagent" / "config" / "mcp.toml"))


def test_group_readable_alone_is_enough_and_a_token_in_the_url_counts(tmp_path):
    text = '[servers.q]\nurl = "http://127.0.0.1:9/mcp?token=abc"\n'
    (warning,) = _exposed(tmp_path, text, 0o640)
    assert "but group can read it (mode 0640)" in warning


def test_a_private_file_or_one_without_secrets_is_not_warned_about(tmp_path):
    assert _exposed(tmp_path / "a", SECRET, 0o600) == []
    assert _exposed(tmp_path / "b", '[servers.p]\nurl = "http://127.0.0.1:9/mcp"\n', 0o644) == []
