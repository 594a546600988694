"""The agent the original CireilClaw's own `init` writes opens in cireil as it is (issue 28 item 3): its tools.toml
names `str-replace` (every preset), which cireil reads in memory as the spec's 2.0 migration makes it (`edit`, on
when either was), says so once, and never writes. `cireil migrate` stays the explicit rewrite, with its backup
where the original keeps its own (upstream-formats.md §3.8) and a word on what the original loses; `cireil init
--adopt` writes the root's migrations.json, which the original's init does not."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import cireil
from cireil.cli import main
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config import migrate as migrate_module
from cireil.runtime.config.migrate import migrate
from cireil.runtime.original.runtime_root import MIGRATION_IDS, migrations_text
from conftest import make_agent
from initkit import original_init, tools_toml, tree
from magicshell import loaded

CIREIL = str(Path(sys.executable).with_name("cireil"))
NOTE = "is read as 'edit = "  # the load note's words, whichever values it names
BACKUP = re.compile(r"\d{14}_cireil_str_replace_to_edit/agents_wren_config_tools\.toml_tools\.toml")


def str_replace_line(agent: Path) -> int:
    return (agent / "config" / "tools.toml").read_text().splitlines().index("str-replace = true") + 1


def notes(issues) -> list[str]:
    return [str(i) for i in issues if NOTE in i.message]


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    return original_init(tmp_path / "home")


# -- the original's init output loads unchanged ---------------------------------------------------------------


@pytest.mark.parametrize(("preset", "edit_on"), [("minimal", False), ("standard", True), ("full", True)])
def test_every_preset_loads_and_its_file_is_left_alone(tmp_path: Path, preset: str, edit_on: bool) -> None:
    agent = original_init(tmp_path / "home", preset=preset)
    tools = agent / "config" / "tools.toml"
    before = (tools.read_bytes(), tools.stat().st_mtime_ns)
    report = cireil.dry_run(agent)
    assert report.ok, report.errors
    (note,) = notes(report.warnings)
    value = "true" if preset != "minimal" else "false"
    line = tools.read_text().splitlines().index(f"str-replace = {value}") + 1
    assert note.startswith(f"config/tools.toml:{line}: warning: 'str-replace = {value}' together with 'edit = ")
    assert "the original CireilClaw sharing this runtime root still registers str-replace" in note
    assert "`cireil migrate <agent-dir>`" in note
    loaded_agent = cireil.load(agent)
    try:
        assert ("edit" in [t.name for t in loaded_agent.tools]) is edit_on
        assert "str-replace" not in [t.name for t in loaded_agent.tools]
        assert len(notes(loaded_agent.warnings)) == 1
    finally:
        loaded_agent.close()
    assert (tools.read_bytes(), tools.stat().st_mtime_ns) == before
    assert not (agent / "config" / "backups").exists()
    assert not (agent.parent.parent / "config" / "backups").exists()


def test_edit_is_on_when_either_tool_is(agent: Path) -> None:
    tools = agent / "config" / "tools.toml"
    tools.write_text(tools_toml("standard").replace("edit = true", "edit = false"))
    loaded_agent = cireil.load(agent)
    try:
        names = [t.name for t in loaded_agent.tools]
        assert names.index("edit") == 2  # edit keeps its own place in the file (close-file, download-attachments)
        (note,) = notes(loaded_agent.warnings)
        assert "'str-replace = true' together with 'edit = false' (line 3) is read as 'edit = true'" in note
    finally:
        loaded_agent.close()


def test_without_an_edit_line_edit_takes_str_replace_s_place(agent: Path) -> None:
    tools = agent / "config" / "tools.toml"
    tools.write_text("list-dir = true\nstr-replace = true\nwrite = true\nexec = false\n")
    loaded_agent = cireil.load(agent)
    try:
        assert [t.name for t in loaded_agent.tools] == ["list-dir", "edit", "write"]
        (note,) = notes(loaded_agent.warnings)
        assert note.startswith("config/tools.toml:2: warning: 'str-replace = true' is read as 'edit = true' ")
    finally:
        loaded_agent.close()
    tools.write_text("list-dir = true\nstr-replace = false\n")
    assert [t.name for t in cireil.dry_run(agent).tools] == ["list-dir"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("list-dir = true\nstr-replace = 1\n", "config/tools.toml:2: 'str-replace' must be true or false, not 1"),
        ("[str-replace]\nenabled = true\n", "config/tools.toml:1: 'str-replace' must be true or false, not a table"),
        ("str-replace = true\nedit = 'on'\n", "config/tools.toml:2: 'edit' must be true or false, not \"on\""),
    ],
)
def test_a_value_the_original_refuses_too_is_an_error(agent: Path, text: str, expected: str) -> None:
    (agent / "config" / "tools.toml").write_text(text)
    report = cireil.dry_run(agent)
    assert [str(e) for e in report.errors] == [expected]
    assert notes(report.issues) == []  # nothing is read as edit from a file that is wrong


def test_outside_a_runtime_root_str_replace_is_still_refused(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, tools_toml("standard"))
    (error,) = cireil.dry_run(agent).errors
    assert str(error).startswith(f"config/tools.toml:{str_replace_line(agent)}: 'str-replace' was removed in 2.0")
    assert "cireil migrate" in str(error)


def test_cli_dry_run_exits_0_with_the_warning(agent: Path) -> None:
    proc = subprocess.run([CIREIL, "dry-run", str(agent)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    line = str_replace_line(agent)
    (note,) = [x for x in proc.stderr.splitlines() if NOTE in x]
    assert note == notes(cireil.dry_run(agent).warnings)[0]
    assert note.startswith(f"config/tools.toml:{line}: warning: 'str-replace = true'")
    root = agent.parent.parent
    proc = subprocess.run([CIREIL, "dry-run", str(root)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # every tool of the standard preset but exec (off) and str-replace (read as edit, which it already enables)
    assert proc.stdout.splitlines() == ["agents/wren: valid agent (19 enabled tools)"]
    assert f"agents/wren/config/tools.toml:{line}: warning: 'str-replace = true'" in proc.stderr


def test_said_once_at_load_and_not_again_when_the_file_changes(shell, agent: Path) -> None:
    ran = loaded(shell, agent)
    assert ran.stderr.count(NOTE) == 1
    agent_object = cireil.current_agent()
    tools = agent / "config" / "tools.toml"
    tools.write_text(tools.read_text().replace("react = true", "react = false"))
    agent_object.refresh()
    assert len(notes(agent_object.warnings)) == 1


# -- cireil migrate: the explicit rewrite ------------------------------------------------------------------------


def test_migrate_keeps_its_backup_where_the_original_keeps_its_own(agent: Path) -> None:
    root = agent.parent.parent
    before = (agent / "config" / "tools.toml").read_bytes()
    report = migrate(agent)
    backups = sorted(p for p in (root / "config" / "backups").rglob("*") if p.is_file())
    assert [str(p.relative_to(root / "config" / "backups")) for p in backups] == [
        str(report.tools.backup.relative_to(root / "config" / "backups"))
    ]
    assert BACKUP.fullmatch(str(report.tools.backup.relative_to(root / "config" / "backups")))
    assert report.tools.backup.read_bytes() == before
    assert stat.S_IMODE(report.tools.backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(report.tools.backup.parent.stat().st_mode) == 0o700
    assert not (agent / "config" / "backups").exists()  # never in the agent's own config/
    assert (agent / "config" / "tools.toml").read_text() == before.decode().replace("str-replace = true\n", "")
    assert report.tools.notes == (
        "the original CireilClaw still registers 'str-replace': from now on its agent 'wren' has no str-replace "
        "tool (it has edit); instructions or skills that name str-replace need updating",
    )
    assert notes(cireil.dry_run(agent).issues) == []


def test_cli_migrate_says_what_the_original_loses(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(agent)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        f"config/tools.toml: removed 'str-replace = true' (line {len(tools_toml('standard').splitlines()) - 1})",
        "config/tools.toml: kept 'edit = true'",
        "config/tools.toml: note: the original CireilClaw still registers 'str-replace': from now on its agent "
        "'wren' has no str-replace tool (it has edit); instructions or skills that name str-replace need updating",
    ]
    assert re.fullmatch(
        rf"backup of the original: {re.escape(str(agent.parent.parent))}/config/backups/{BACKUP.pattern}", out[3]
    )


def test_str_replace_false_loses_the_original_nothing(agent: Path) -> None:
    (agent / "config" / "tools.toml").write_text(tools_toml("minimal"))
    assert migrate(agent).tools.notes == ()


def test_two_runs_keep_two_backups(agent: Path) -> None:
    first = migrate(agent).tools.backup
    (agent / "config" / "tools.toml").write_text("str-replace = false\nlist-dir = true\n")
    second = migrate(agent).tools.backup
    assert first != second and first.read_text() == tools_toml("standard")
    assert second.read_text() == "str-replace = false\nlist-dir = true\n"


def test_a_failed_rewrite_leaves_every_file_and_no_backup(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = agent / "config" / "engine.toml"
    engine.write_text('[providers.local]\napiBase = "http://127.0.0.1:9/v1"\ndefaultModel = "m"\n')
    root = agent.parent.parent
    before = tree(root)
    real = migrate_module._atomic_replace
    calls: list[Path] = []

    def second_fails(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:  # tools.toml was replaced; engine.toml's replacement fails
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(migrate_module, "_atomic_replace", second_fails)
    with pytest.raises(OSError, match="No space left"):
        migrate(agent)
    assert calls[:2] == [agent / "config" / "tools.toml", engine]
    after = tree(root)
    backups = root / "config" / "backups"
    assert {k: v for k, v in after.items() if not k.startswith("config/backups")} == before
    assert [p for p in backups.rglob("*") if p.is_file()] == []


# -- cireil init --adopt --------------------------------------------------------------------------------------


@pytest.mark.parametrize("named", ["root", "agents", "agent"])
def test_adopt_writes_migrations_json_and_nothing_else(
    agent: Path, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = agent.parent.parent
    before = tree(root.parent)
    target = {"root": root, "agents": root / "agents", "agent": agent}[named]
    assert main(["init", "--adopt", str(target)]) == 0
    out = capsys.readouterr().out
    path = root / "config" / "migrations.json"
    assert out.startswith(f"wrote {path}: all {len(MIGRATION_IDS)} config migrations of the original")
    assert path.read_text() == migrations_text()
    assert json.loads(path.read_text()) == {"applied": list(MIGRATION_IDS)}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    after = tree(root.parent)
    assert {k: v for k, v in after.items() if k != ".cireilclaw/config/migrations.json"} == before


def test_adopt_never_replaces_an_existing_file(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = agent.parent.parent / "config" / "migrations.json"
    path.write_text('{"applied": []}')
    assert main(["init", "--adopt", str(agent)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cireil: error: {path} exists already and is left as it is; `cireil dry-run ")
    assert path.read_text() == '{"applied": []}'


def test_adopt_refuses_what_is_not_a_runtime_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    solo = make_agent(tmp_path)
    assert main(["init", "--adopt", str(solo)]) == 2
    assert "is neither a runtime root (a folder holding agents/" in capsys.readouterr().err
    assert main(["init", "--adopt", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "config").exists() and not (solo / "config" / "migrations.json").exists()


def test_dry_run_names_the_command_and_is_quiet_after_it(agent: Path) -> None:
    root = agent.parent.parent
    (missing,) = [str(w) for w in cireil.dry_run(agent).warnings if "migrations.json" in str(w)]
    assert f"create it with `cireil init --adopt {root}`, which lists all 8 migrations as applied" in missing
    proc = subprocess.run([CIREIL, "init", "--adopt", str(root)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [str(w) for w in cireil.dry_run(agent).warnings if "migrations.json" in str(w)] == []


def test_init_on_an_existing_agent_points_at_adopt(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(agent)]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and f"`cireil init --adopt {agent}` writes its migrations.json" in err
    assert not (agent.parent.parent / "config" / "migrations.json").exists()


def test_adopt_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--help"]) == 0
    assert "--adopt" in capsys.readouterr().out


def test_the_adopted_root_starts_as_cireil_s_own_init_leaves_it(tmp_path: Path) -> None:
    from cireil.runtime.scaffold import init

    init(tmp_path / "ours" / "agents" / "wren")
    theirs = original_init(tmp_path / "home").parent.parent
    assert main(["init", "--adopt", str(theirs)]) == 0
    ours = (tmp_path / "ours" / "config" / "migrations.json").read_bytes()
    assert (theirs / "config" / "migrations.json").read_bytes() == ours
    mode = os.stat(tmp_path / "ours" / "config" / "migrations.json").st_mode
    assert os.stat(theirs / "config" / "migrations.json").st_mode == mode


def test_the_full_preset_loads_with_exec(tmp_path: Path) -> None:
    agent = original_init(tmp_path / "home", preset="full")
    loaded_agent = cireil.load(agent)
    try:
        assert len(loaded_agent.tools) == 20 and "exec" in [t.name for t in loaded_agent.tools]
    finally:
        loaded_agent.close()
    with pytest.raises(ConfigError, match=r"'str-replace' was removed in 2\.0"):
        cireil.load(make_agent(tmp_path, tools_toml("full")))  # the same file outside a root
