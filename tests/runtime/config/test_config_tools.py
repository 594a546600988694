"""config/tools.toml validation: every rule of the spec, every error with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config.tomlsource import TomlSource
from cireil.runtime.config.tools_config import ExecConfig, parse_tools_config
from cireil.runtime.toolkit.registry import BUILTIN_NAMES
from conftest import make_agent

OK_PREFIX = "list-dir = true\nwrite = true\n"


def errors(agent: Path) -> list[str]:
    report = cireil.dry_run(agent)
    return [str(i) for i in report.errors]


def agent_with(tmp_path: Path, tools_toml: str) -> Path:
    return make_agent(tmp_path, tools_toml)


def parse(text: str, known=BUILTIN_NAMES):
    return parse_tools_config(TomlSource.parse("config/tools.toml", text), known=known)


# -- the file itself ------------------------------------------------------------------------------


def test_tools_toml_is_required(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "tools.toml").unlink()
    report = cireil.dry_run(agent)
    assert not report.ok
    assert str(report.errors[0]).startswith("config/tools.toml: required file is missing")
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    assert "config/tools.toml" in str(info.value)
    assert "required file is missing" in str(info.value)


def test_tools_toml_removed_from_a_loaded_agent_fails_calls_until_it_is_back(tmp_path):
    # loading finds the agent by its tools.toml; only the re-read at a call's start can notice it is gone
    agent_dir = make_agent(tmp_path, OK_PREFIX)
    tools_toml = agent_dir / "config" / "tools.toml"
    agent = cireil.load(agent_dir)
    try:
        assert agent.call("list-dir", path="/workspace").success
        tools_toml.unlink()
        with pytest.raises(ConfigError) as info:
            agent.call("list-dir", path="/workspace")
        assert str(info.value).startswith("config/tools.toml: required file is missing")
        tools_toml.write_text(OK_PREFIX)
        assert agent.call("list-dir", path="/workspace").success
    finally:
        agent.close()


def test_valid_file_loads_in_file_order(tmp_path):
    agent = agent_with(tmp_path, "session-info = true\nread = false\nlist-dir = true\nwrite = false\n")
    loaded = cireil.load(agent)
    assert [t.name for t in loaded.tools] == ["session-info", "list-dir"]
    assert cireil.dry_run(agent).ok


def test_empty_file_enables_nothing(tmp_path):
    agent = agent_with(tmp_path, "")
    assert cireil.load(agent).tools == []


@pytest.mark.parametrize(
    ("line", "shown"),
    [('"yes"', '"yes"'), ("1", "1"), ("[true]", "an array"), ("{ on = true }", "a table"), ("1.5", "1.5")],
)
def test_each_tool_must_be_a_boolean(tmp_path, line, shown):
    agent = agent_with(tmp_path, f"# header\n{OK_PREFIX}session-info = {line}\n")
    assert errors(agent) == [f"config/tools.toml:4: 'session-info' must be true or false, not {shown}"]


def test_tool_table_is_not_a_boolean(tmp_path):
    agent = agent_with(tmp_path, f"{OK_PREFIX}\n[session-info]\nenabled = true\n")
    assert errors(agent) == ["config/tools.toml:4: 'session-info' must be true or false, not a table"]


# -- unknown, removed and not-yet-provided tools -----------------------------------------------------


def test_unknown_tool_rejected_even_when_false_with_did_you_mean(tmp_path):
    agent = agent_with(tmp_path, "# tools\nlist-dir = true\n\n\n\nwrite = true\nreed = false\n")
    assert errors(agent) == ["config/tools.toml:7: unknown tool 'reed' (did you mean 'read'?)"]
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    assert str(info.value) == "config/tools.toml:7: unknown tool 'reed' (did you mean 'read'?)"
    assert info.value.issues[0].key == "reed"


def test_unknown_tool_underscore_spelling_suggests_the_dash_name(tmp_path):
    agent = agent_with(tmp_path, "list_dir = true\n")
    assert errors(agent) == ["config/tools.toml:1: unknown tool 'list_dir' (did you mean 'list-dir'?)"]


def test_unknown_tool_without_a_close_match(tmp_path):
    agent = agent_with(tmp_path, "zzzzzz = true\n")
    assert errors(agent) == ["config/tools.toml:1: unknown tool 'zzzzzz'"]


def test_quoted_unknown_key_is_found_on_its_line(tmp_path):
    agent = agent_with(tmp_path, 'list-dir = true\n"wirte" = true\n')
    assert errors(agent) == ["config/tools.toml:2: unknown tool 'wirte' (did you mean 'write'?)"]


@pytest.mark.parametrize("value", ["true", "false"])
def test_str_replace_points_at_cireil_migrate(tmp_path, value):
    agent = agent_with(tmp_path, f"{OK_PREFIX}str-replace = {value}\n")
    [message] = errors(agent)
    assert message.startswith("config/tools.toml:3: 'str-replace' was removed in 2.0")
    assert "cireil migrate" in message
    assert "edit" in message


@pytest.mark.parametrize("edit", [None, True, False])
@pytest.mark.parametrize("old", [True, False])
@pytest.mark.parametrize("first", ["str-replace", "edit"])
def test_on_a_shared_root_str_replace_is_read_as_the_migration_writes_it(
    tmp_path: Path, edit: bool | None, old: bool, first: str
) -> None:
    """In memory exactly what `cireil migrate` writes: the same enabled tools, in the same order."""

    def toml(value: bool) -> str:
        return "true" if value else "false"

    lines = {
        "str-replace": f"str-replace = {toml(old)}\n",
        "edit": f"edit = {toml(edit)}\n" if edit is not None else "",
    }
    second = "edit" if first == "str-replace" else "str-replace"
    text = f"list-dir = true\n{lines[first]}write = false\n{lines[second]}read = true\n"
    in_memory, issues = parse_tools_config(
        TomlSource.parse("config/tools.toml", text), known=BUILTIN_NAMES, shared_root=True
    )
    (note,) = issues
    assert note.severity == "warning" and note.line == text.splitlines().index(lines["str-replace"][:-1]) + 1
    assert f"is read as 'edit = {toml(bool(edit) or old)}'" in note.message
    agent = agent_with(tmp_path, text)
    from cireil.runtime.config.migrate import migrate

    migrate(agent)
    written, issues = parse((agent / "config" / "tools.toml").read_text())
    assert issues == []
    assert list(in_memory.enabled.items()) == list(written.enabled.items())


def test_a_plugin_or_python_tool_cannot_take_the_old_name(tmp_path):
    config, issues = parse_tools_config(
        TomlSource.parse("config/tools.toml", "str-replace = true\n"), known=(*BUILTIN_NAMES, "str-replace")
    )
    assert [i.severity for i in issues] == ["error"] and config.enabled == {}


def test_every_spec_builtin_is_known():
    spec_tools = {
        "respond",
        "no-response",
        "edit",
        "read",
        "read-sections",
        "open-file",
        "close-file",
        "read-skill",
        "list-dir",
        "write",
        "exec",
        "read-history",
        "read-session",
        "list-sessions",
        "query-sessions",
        "download-attachments",
        "react",
        "schedule",
        "invoke",
        "session-info",
        "prune-boundaries",
    }
    assert set(BUILTIN_NAMES) == spec_tools
    assert "str-replace" not in BUILTIN_NAMES


def test_builtins_set_to_false_are_not_offered(tmp_path):
    off = [n for n in BUILTIN_NAMES if n not in ("list-dir", "write", "session-info")]
    body = OK_PREFIX + "".join(f"{n} = false\n" for n in off)
    agent = agent_with(tmp_path, body)
    assert errors(agent) == []
    assert [t.name for t in cireil.load(agent).tools] == ["list-dir", "write"]


def test_mcp_tool_names_without_a_server_are_unknown(tmp_path):
    agent = agent_with(tmp_path, f"{OK_PREFIX}mcp__docs__search = false\n")
    assert errors(agent) == [
        "config/tools.toml:3: unknown tool 'mcp__docs__search': there is no server 'docs' in config/mcp.toml"
    ]


# -- exec ----------------------------------------------------------------------------------------


def test_exec_false_and_absent_mean_disabled():
    config, issues = parse("exec = false\n")
    assert issues == [] and config.exec == ExecConfig() and config.exec.enabled is False
    assert config.enabled == {"exec": False}
    config, issues = parse("list-dir = true\n")
    assert issues == [] and config.exec.enabled is False and "exec" not in config.enabled


def test_exec_true_is_enabled_with_all_defaults():
    config, issues = parse("exec = true\n")
    assert issues == []
    assert config.exec == ExecConfig(enabled=True)
    assert config.enabled_names == ["exec"]


def test_exec_defaults_are_the_spec_defaults():
    d = ExecConfig()
    assert (d.enabled, d.timeout, d.inline, d.inlineThresholdBytes, d.outputDir) == (
        False,
        60000,
        True,
        16384,
        "/workspace/.exec-output",
    )
    assert (d.previewHead, d.previewTail, d.maxPreviewLineLength, d.hostEnvPassthrough) == (20, 20, 1000, ())


def test_exec_table_with_every_field():
    text = """\
[exec]
enabled = true
timeout = 1000
inline = false
inlineThresholdBytes = 0
outputDir = "/workspace/out"
previewHead = 0
previewTail = 3
maxPreviewLineLength = 1
hostEnvPassthrough = ["PATH", "LANG"]
"""
    config, issues = parse(text)
    assert issues == []
    assert config.exec == ExecConfig(
        enabled=True,
        timeout=1000,
        inline=False,
        inlineThresholdBytes=0,
        outputDir="/workspace/out",
        previewHead=0,
        previewTail=3,
        maxPreviewLineLength=1,
        hostEnvPassthrough=("PATH", "LANG"),
    )


def test_exec_table_without_enabled_is_disabled_and_keeps_defaults():
    config, issues = parse("[exec]\ntimeout = 5000\n")
    assert issues == []
    assert config.exec == ExecConfig(timeout=5000)
    assert config.enabled_names == []


def test_exec_table_disabled_is_accepted_and_keeps_its_settings(tmp_path):
    agent = agent_with(tmp_path, f"{OK_PREFIX}[exec]\nenabled = false\ntimeout = 2000\n")
    assert errors(agent) == []
    loaded = cireil.load(agent)
    assert loaded._snapshot.tools_config.exec.timeout == 2000


def test_exec_enabled_as_table_or_true_loads_the_exec_tool(tmp_path):
    agent = agent_with(tmp_path, f"{OK_PREFIX}[exec]\ntimeout = 2000\nenabled = true\n")
    assert errors(agent) == []
    loaded = cireil.load(agent)
    assert "exec" in [t.name for t in loaded.tools]
    assert loaded._snapshot.tools_config.exec.timeout == 2000
    agent = agent_with(tmp_path, f"{OK_PREFIX}exec = true\n")
    assert errors(agent) == []
    assert cireil.load(agent)._snapshot.tools_config.exec == ExecConfig(enabled=True)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("timeout = 999", "'exec.timeout' must be a whole number of milliseconds >= 1000, not 999"),
        ("timeout = 1500.5", "'exec.timeout' must be a whole number of milliseconds >= 1000, not 1500.5"),
        ('timeout = "60s"', "'exec.timeout' must be a whole number of milliseconds >= 1000, not \"60s\""),
        ("timeout = true", "'exec.timeout' must be a whole number of milliseconds >= 1000, not true"),
        ("inlineThresholdBytes = -1", "'exec.inlineThresholdBytes' must be a whole number >= 0, not -1"),
        ("previewHead = -1", "'exec.previewHead' must be a whole number >= 0, not -1"),
        ("previewTail = -5", "'exec.previewTail' must be a whole number >= 0, not -5"),
        ("maxPreviewLineLength = 0", "'exec.maxPreviewLineLength' must be a whole number >= 1, not 0"),
        ('enabled = "yes"', "'exec.enabled' must be true or false, not \"yes\""),
        ("inline = 1", "'exec.inline' must be true or false, not 1"),
        ('outputDir = ""', "'exec.outputDir' must be a non-empty string, not \"\""),
        ('outputDir = "   "', "'exec.outputDir' must be a non-empty string, not \"   \""),
        ("outputDir = 3", "'exec.outputDir' must be a non-empty string, not 3"),
        (
            'outputDir = "workspace/out"',
            "'exec.outputDir' must be an absolute sandbox path such as /workspace/.exec-output",
        ),
        (
            'hostEnvPassthrough = "PATH"',
            "'exec.hostEnvPassthrough' must be a list of non-empty variable names, not \"PATH\"",
        ),
        ('hostEnvPassthrough = ["PATH", ""]', "'exec.hostEnvPassthrough' must be a list of non-empty variable names"),
        (
            "hostEnvPassthrough = [1]",
            "'exec.hostEnvPassthrough' must be a list of non-empty variable names, not an array",
        ),
    ],
)
def test_exec_field_bounds_and_types(tmp_path, line, message):
    agent = agent_with(tmp_path, f"{OK_PREFIX}\n[exec]\n# settings\n{line}\n")
    assert errors(agent) == [f"config/tools.toml:6: {message}"]


def test_exec_unknown_keys_with_did_you_mean_and_binaries_pointer(tmp_path):
    agent = agent_with(
        tmp_path,
        f'{OK_PREFIX}[exec]\nenabled = false\ntimout = 2000\nbinaries = ["git"]\ncolour = 1\n',
    )
    assert errors(agent) == [
        "config/tools.toml:5: unknown key 'timout' in [exec] (did you mean 'timeout'?)",
        "config/tools.toml:6: unknown key 'binaries' in [exec] (the binary allowlist belongs in "
        "config/sandbox.toml under [bwrap] binaries)",
        "config/tools.toml:7: unknown key 'colour' in [exec] (expected: enabled, timeout, inline, "
        "inlineThresholdBytes, outputDir, previewHead, previewTail, maxPreviewLineLength, hostEnvPassthrough, "
        "maxOutputBytes, maxProcesses)",
    ]


@pytest.mark.parametrize("value", ['"on"', "1", "[true]"])
def test_exec_must_be_bool_or_table(tmp_path, value):
    agent = agent_with(tmp_path, f"{OK_PREFIX}exec = {value}\n")
    [message] = errors(agent)
    assert message.startswith("config/tools.toml:3: 'exec' must be true, false or a table, not ")


def test_exec_inline_table_and_dotted_keys_are_located(tmp_path):
    agent = agent_with(tmp_path, f"{OK_PREFIX}exec = {{ enabled = false, timeout = 10 }}\n")
    timeout = "'exec.timeout' must be a whole number of milliseconds >= 1000"
    assert errors(agent) == [f"config/tools.toml:3: {timeout}, not 10"]
    agent = agent_with(tmp_path, f"{OK_PREFIX}exec.enabled = false\n\nexec.previewTail = -1\n")
    assert errors(agent) == ["config/tools.toml:5: 'exec.previewTail' must be a whole number >= 0, not -1"]


def test_multiline_values_do_not_confuse_line_numbers(tmp_path):
    text = (
        "list-dir = true\n"
        "[exec]\n"
        "hostEnvPassthrough = [\n"
        '  "PATH",\n'
        '  "timeout = 1",\n'
        "]\n"
        'outputDir = """/workspace/x"""\n'
        "timeout = 3\n"
    )
    agent = agent_with(tmp_path, text)
    timeout = "'exec.timeout' must be a whole number of milliseconds >= 1000"
    assert errors(agent) == [f"config/tools.toml:8: {timeout}, not 3"]


# -- many errors at once, syntax errors -------------------------------------------------------------


def test_all_errors_of_the_file_are_reported_in_line_order(tmp_path):
    text = (
        "# tools\n"  # 1
        "reed = false\n"  # 2
        "list-dir = 1\n"  # 3
        "read-history = 2\n"  # 4
        "str-replace = true\n"  # 5
        "[exec]\n"  # 6
        "timeout = 10\n"  # 7
        "bogus = 1\n"  # 8
    )
    agent = agent_with(tmp_path, text)
    found = errors(agent)
    assert [m.split(":")[1] for m in found] == ["2", "3", "4", "5", "7", "8"]
    assert all(m.startswith("config/tools.toml:") for m in found)
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    assert len(info.value.issues) == 6
    assert str(info.value).count("\n") == 5


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("list-dir = true\nwrite = \n", 2),
        ("list-dir = true\n\nwrite = true true\n", 3),
        ('list-dir = true\nwrite = "open\n', 2),
        ("list-dir = true\nlist-dir = false\n", 2),
        ("list-dir = true\nhostEnv = [1,\n", 2),
        ('list-dir = true\nnote = """never closed\n', 2),
    ],
)
def test_toml_syntax_errors_give_a_line(tmp_path, text, line):
    agent = agent_with(tmp_path, text)
    [message] = errors(agent)
    assert message.startswith(f"config/tools.toml:{line}: invalid TOML: ")


def test_non_utf8_file_gives_a_line(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "tools.toml").write_bytes(b"list-dir = true\n# caf\xe9\n")
    assert errors(agent) == ["config/tools.toml:2: file is not valid UTF-8"]


def test_escaped_and_non_ascii_quoted_keys_are_located(tmp_path):
    agent = agent_with(tmp_path, 'list-dir = true\n"wri\\u0074e" = 1\n"café" = true\n"caf\\u00e9x" = true\n')
    assert errors(agent) == [
        "config/tools.toml:2: 'write' must be true or false, not 1",
        "config/tools.toml:3: unknown tool 'café'",
        "config/tools.toml:4: unknown tool 'caféx'",
    ]
