"""The `cireil` command: every subcommand, its output and its exit code (contracts.md, "Command line")."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import cireil
from cireil.cli import main
from conftest import make_agent

CIREIL = str(Path(sys.executable).with_name("cireil"))


def run(*args: str, cwd: Path, stdin: str | None = None, module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cireil", *args] if module else [CIREIL, *args]
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- real processes: the console script and `python -m cireil` -----------------------------------------


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_version(tmp_path: Path, module: bool) -> None:
    proc = run("--version", cwd=tmp_path, module=module)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"cireil {cireil.__version__}"


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_init_dry_run_and_call_end_to_end(tmp_path: Path, module: bool) -> None:
    proc = run("init", "wren", cwd=tmp_path, module=module)
    assert proc.returncode == 0, proc.stderr
    assert "created agent 'wren'" in proc.stdout

    proc = run("dry-run", "wren", cwd=tmp_path, module=module)
    assert (proc.returncode, proc.stderr) == (0, "")
    # the demo's tool list grows as tools land; the ones every version has must be there
    enabled = proc.stdout.split("enabled tools", 1)[1].split(":", 1)[1].strip().split(", ")
    assert {"list-dir", "write", "session-info", "read", "open-file", "read-sections"} <= set(enabled)

    proc = run("call", "wren", "list-dir", '{"path": "/workspace"}', cwd=tmp_path, module=module)
    assert proc.returncode == 0, proc.stderr
    assert {"name": "garden-handbook.md", "type": "file"} in json.loads(proc.stdout)["entries"]

    proc = run("call", "wren", "read", "/workspace/garden-handbook.md", cwd=tmp_path, module=module)  # as the magic
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path"] == "/workspace/garden-handbook.md"

    proc = run(
        "call", "wren", "write", "-", cwd=tmp_path, module=module, stdin='{"path": "/memories/x.md", "content": "hi"}'
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"path": "/memories/x.md", "success": True}
    assert (tmp_path / "wren" / "memories" / "x.md").read_text() == "hi"


def test_user_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    make_agent(tmp_path, name="a")
    cases = [
        (["call", "a", "lst-dir"], "cireil: error: tool 'lst-dir' is unknown for agent 'a' (did you mean 'list-dir'?)"),
        (["call", "a", "list-dir", "{oops"], "cireil: error: invalid JSON object"),
        (["call", "missing", "list-dir"], "missing: agent directory does not exist"),
    ]
    for args, start in cases:
        proc = run(*args, cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert proc.stderr.startswith(start), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "Traceback" not in proc.stderr


def test_importing_the_cli_loads_nothing_heavy() -> None:
    code = (
        "import sys, cireil.cli; "
        "print(sorted(m for m in sys.modules if m.startswith(('cireil', 'tomlkit', 'yaml', 'IPython', 'httpx'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # commands.py is the declaration of the commands: argparse and re only
    assert proc.stdout.strip() == "['cireil', 'cireil.cli', 'cireil.commands']"


# -- usage ---------------------------------------------------------------------------------------------


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys)
    assert code == 2
    assert "usage: cireil" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    for command in ("init", "dry-run", "tools", "call", "migrate"):
        assert command in out


def test_missing_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "call", "somewhere")
    assert code == 2
    assert "TOOL" in err


# -- init ----------------------------------------------------------------------------------------------


def test_init_refuses_non_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.txt").write_text("mine")
    code, out, err = cli(capsys, "init", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"cireil: error: {tmp_path} is not empty; choose a new or empty directory\n"


# -- dry-run -------------------------------------------------------------------------------------------


def test_dry_run_valid(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "dry-run", str(agent_dir))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"testagent: valid agent at {agent_dir}",
        "enabled tools (3): list-dir, write, session-info",
    ]


def test_dry_run_prints_every_error_as_file_line_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = make_agent(tmp_path, "list-dir = true\nreed = true\nexec = 5\n")
    (agent / "config" / "sandbox.toml").write_text('backend = "docker"\n')
    code, out, err = cli(capsys, "dry-run", str(agent))
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert "config/sandbox.toml:1: 'backend' must be one of 'bwrap', 'none', not \"docker\"" in lines
    assert "config/tools.toml:2: unknown tool 'reed' (did you mean 'read'?)" in lines
    assert "config/tools.toml:3: 'exec' must be true, false or a table, not 5" in lines
    assert lines[-1] == f"{agent}: invalid agent (3 errors)"


def test_dry_run_shows_warnings_and_still_passes(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (agent_dir / "blocks" / "soul.md").write_text("no frontmatter\n")
    code, out, err = cli(capsys, "dry-run", str(agent_dir))
    assert code == 0
    assert err.startswith("blocks/soul.md:1: warning: invalid frontmatter")
    assert "1 warning (see above)" in out


def test_dry_run_json(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "dry-run", str(agent_dir), "--json")
    assert code == 0
    report = json.loads(out)
    assert report == cireil.dry_run(agent_dir).as_dict()
    assert report["ok"] is True
    assert [t["name"] for t in report["tools"]] == ["list-dir", "write", "session-info"]

    (agent_dir / "config" / "tools.toml").write_text("list-dir = maybe\n")
    code, out, _ = cli(capsys, "dry-run", str(agent_dir), "--json")
    report = json.loads(out)
    assert code == 2
    assert report["ok"] is False
    assert report["errors"][0]["file"] == "config/tools.toml"
    assert report["errors"][0]["line"] == 1


# -- tools ---------------------------------------------------------------------------------------------


def test_tools_json_gives_name_description_and_schema(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "tools", str(agent_dir), "--json")
    assert code == 0
    tools = {t["name"]: t for t in json.loads(out)}
    assert list(tools) == ["list-dir", "write", "session-info"]
    agent = cireil.load(agent_dir)
    for tool in agent.tools:
        assert tools[tool.name]["description"] == tool.description
        assert tools[tool.name]["parameters"] == tool.parameters
    assert tools["write"]["parameters"]["type"] == "object"
    assert set(tools["write"]["parameters"]["required"]) == {"path", "content"}


def test_tools_human(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "tools", str(agent_dir))
    assert code == 0
    assert out.startswith("list-dir: List the files and subdirectories at the given path.")
    assert "    path (string, required): Directory path to list. Sandbox paths" in out
    assert "session-info: Get information about the current session context." in out
    assert "    (no parameters)" in out


def test_tools_on_invalid_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = make_agent(tmp_path, "str-replace = true\n")
    code, out, err = cli(capsys, "tools", str(agent), "--json")
    assert (code, out) == (2, "")
    assert err.startswith("config/tools.toml:1: 'str-replace' was removed in 2.0")
    assert "cireil migrate" in err


# -- call ----------------------------------------------------------------------------------------------


def test_call_prints_the_result_dict(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "call", str(agent_dir), "session-info")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"platform": "remote", "session_id": "cli:main", "success": True}


def test_call_accepts_underscores_for_hyphens(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "call", str(agent_dir), "list_dir", '{"path": "/workspace/docs"}')
    assert code == 0
    assert json.loads(out)["entries"] == [{"name": "guide.md", "type": "file"}]


def test_call_reads_arguments_from_stdin(
    agent_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"path": "/workspace/new.txt", "content": "from stdin"}'))
    code, _, _ = cli(capsys, "call", str(agent_dir), "write", "-")
    assert code == 0
    assert (agent_dir / "workspace" / "new.txt").read_text() == "from stdin"


def test_call_failure_result_exits_1(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "call", str(agent_dir), "list-dir", '{"path": "/etc"}')
    assert code == 1
    result = json.loads(out)
    assert result["success"] is False
    assert "outside the sandbox" in result["error"]
    assert str(agent_dir) not in out  # host paths never reach the agent


def test_call_parameter_error_is_a_result(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "call", str(agent_dir), "list-dir")
    assert code == 1
    assert json.loads(out)["success"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["read"], "cireil: error: tool 'read' is not enabled in config/tools.toml for agent 'testagent'"),
        (["lisdir"], "cireil: error: tool 'lisdir' is unknown for agent 'testagent' (did you mean 'list-dir'?)"),
        (["list-dir", '{"path": "/workspace"}', "extra"], "cireil: error: invalid JSON object: Extra data"),
        (["list-dir", "{'path': 1}"], "cireil: error: invalid JSON object"),
        (["list-dir", "/workspace", "/tasks"], "cireil: error: two bare arguments ('/workspace' and '/tasks')"),
        (["session-info", "now"], "cireil: error: tool 'session-info' takes no bare argument ('now')"),
        (["list-dir", "path=/a", "path=/b"], "cireil: error: argument 'path' is given twice"),
    ],
)
def test_call_usage_errors_exit_2(agent_dir: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str):
    code, out, err = cli(capsys, "call", str(agent_dir), *args)
    assert (code, out) == (2, "")
    assert err.startswith(message)
    assert len(err.splitlines()) == 1


def test_call_stdin_must_hold_one_json_object(
    agent_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("[1, 2]"))
    code, out, err = cli(capsys, "call", str(agent_dir), "write", "-")
    assert (code, out) == (2, "")
    assert err.startswith("cireil: error: invalid JSON object: the arguments must be one JSON object")


# the magics' argument forms (issue 34): the words after TOOL go through the magics' own parser


def test_call_takes_a_bare_word_for_the_main_argument(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "call", str(agent_dir), "list-dir", "/workspace/docs")
    assert (code, err) == (0, "")
    assert json.loads(out)["entries"] == [{"name": "guide.md", "type": "file"}]


@pytest.mark.parametrize(
    "words",
    [
        ["path=/workspace/x.txt", "content=hi there"],  # `'content=hi there'` as a shell passes it
        ["/workspace/x.txt", "content=hi there"],
        ["content=hi there", "/workspace/x.txt"],
        ['{"path": "/workspace/x.txt",', '"content": "hi there"}'],  # an unquoted JSON object, split by the shell
        ["/workspace/x.txt", 'content="hi there"'],  # a JSON string value, as the magic decodes it
    ],
)
def test_call_takes_key_value_words_like_the_magic(
    agent_dir: Path, capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    code, out, err = cli(capsys, "call", str(agent_dir), "write", *words)
    assert (code, err) == (0, ""), err
    assert json.loads(out) == {"path": "/workspace/x.txt", "success": True}
    assert (agent_dir / "workspace" / "x.txt").read_text() == "hi there"


def test_call_keeps_text_for_string_parameters(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `content=42` would be the number 42 as JSON; the schema says string, so the file holds "42"
    code, _, err = cli(capsys, "call", str(agent_dir), "write", "/workspace/n.txt", "content=42")
    assert (code, err) == (0, "")
    assert (agent_dir / "workspace" / "n.txt").read_text() == "42"


def test_words_after_the_tool_are_never_cireil_options(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `cireil call DIR exec ls -la` must hand `-la` to the tool, not fail as an unknown option of cireil
    code, out, err = cli(capsys, "call", str(agent_dir), "list-dir", "-x")
    assert (code, err) == (1, "")
    assert "'-x'" in json.loads(out)["error"]


def test_call_and_magic_read_the_same_words_the_same_way() -> None:
    """One parser: a line the magic splits itself and the same words split by a shell give one dict."""
    from cireil.runtime.toolkit.toolargs import parse_args, parse_argv

    line = """/workspace/a.txt content='two words' n=3 tags='["a", "b"]' flag=true s="3" """
    words = shlex.split(line)
    kwargs = {"main_arg": "path", "strings": {"content", "s"}}
    assert (
        parse_argv(words, **kwargs)
        == parse_args(line, **kwargs)
        == {
            "path": "/workspace/a.txt",
            "content": "two words",
            "n": 3,
            "tags": ["a", "b"],
            "flag": True,
            "s": "3",
        }
    )


def test_call_on_broken_config_exits_2_with_every_error(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (agent_dir / "config" / "tools.toml").write_text("list-dir = true\nwrte = true\nexec = { timeout = 5 }\n")
    code, out, err = cli(capsys, "call", str(agent_dir), "list-dir", '{"path": "/workspace"}')
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "config/tools.toml:2: unknown tool 'wrte' (did you mean 'write'?)",
        "config/tools.toml:3: 'exec.timeout' must be a whole number of milliseconds >= 1000, not 5",
    ]


# -- a closed pipe (issue 34) --------------------------------------------------------------------------


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """`cireil tools DIR | head`: no BrokenPipeError traceback; the status a shell gives a command SIGPIPE ended."""
    assert run("init", "wren", cwd=tmp_path).returncode == 0
    for args in (["tools", "wren"], ["tools", "wren", "--json"], ["dry-run", "wren", "--builtins"]):
        proc = subprocess.Popen(
            [CIREIL, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the first line is written
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 141, err
        assert err == ""
