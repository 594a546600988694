"""`cireil migrate`: str-replace -> edit in tools.toml, [providers.<name>] -> [<name>] in engine.toml; every other
byte kept, a backup of the original first, nothing written when anything fails."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

import cireil
from cireil.cli import main
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config.migrate import MigrationResult, migrate
from conftest import make_agent

# config/backups/<id>/<file>, ids in the form of the original's (`YYYYMMDDHHMMSS_name`), one folder per run
BACKUP_NAME = re.compile(r"\d{14}_cireil_str_replace_to_edit(_\d+)?/tools\.toml")

# A file with everything a user might have written around the line that changes.
ORIGINAL = """\
# Tools for my agent.
# Edited by hand; keep the comments.

list-dir = true   # browsing
write=true
str-replace = true    # the old editing tool

  # indented comment
session-info = false

[exec]
enabled = false  # not yet
timeout = 60000
"""


def agent_with(tmp_path: Path, tools_toml: str, *, newline: str = "\n") -> Path:
    agent = make_agent(tmp_path)
    (agent / "config" / "tools.toml").write_bytes(tools_toml.replace("\n", newline).encode())
    return agent


def tools_text(agent: Path) -> str:
    return (agent / "config" / "tools.toml").read_bytes().decode()


def backups(agent: Path) -> list[Path]:
    folder = agent / "config" / "backups"
    return sorted(folder.glob("*/*")) if folder.exists() else []


def shown(backup: Path) -> str:
    return f"{backup.parent.name}/{backup.name}"


def test_str_replace_becomes_edit_in_place_and_nothing_else_changes(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, ORIGINAL)
    result = migrate(agent)
    assert tools_text(agent) == ORIGINAL.replace("str-replace = true", "edit = true")
    assert result.tools.changed
    assert result.tools.changes == ("replaced 'str-replace = true' with 'edit = true' (line 6)",)
    assert result.tools.file == agent / "config" / "tools.toml"


@pytest.mark.parametrize(
    ("edit", "str_replace", "expected"),
    [
        (None, True, True),
        (None, False, False),
        (True, True, True),
        (True, False, True),
        (False, True, True),
        (False, False, False),
    ],
)
def test_edit_is_enabled_when_either_tool_was(tmp_path: Path, edit: bool | None, str_replace: bool, expected: bool):
    def toml(value: bool) -> str:
        return "true" if value else "false"

    before = "# header\nlist-dir = true\n"
    if edit is not None:
        before += f"edit = {toml(edit)}  # the new tool\n"
    before += f"str-replace = {toml(str_replace)}\n# footer\n"
    agent = agent_with(tmp_path, before)
    migrate(agent)
    if edit is None:
        after = before.replace(f"str-replace = {toml(str_replace)}", f"edit = {toml(expected)}")
    else:
        after = before.replace(f"str-replace = {toml(str_replace)}\n", "").replace(
            f"edit = {toml(edit)}", f"edit = {toml(expected)}"
        )
    assert tools_text(agent) == after


def test_an_existing_edit_line_keeps_its_place_when_str_replace_comes_first(tmp_path: Path) -> None:
    before = "str-replace = true # old\nread = false\nedit = false # new\n"
    agent = agent_with(tmp_path, before)
    result = migrate(agent)
    assert tools_text(agent) == "read = false\nedit = true # new\n"
    assert result.tools.changes == (
        "removed 'str-replace = true' (line 1)",
        "set 'edit = true' (was false)",
    )


def test_key_spacing_and_quoting_are_kept(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, 'list-dir=true\n"str-replace"   =false # x\n')
    migrate(agent)
    assert tools_text(agent) == "list-dir=true\nedit   =false # x\n"


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, ORIGINAL, newline="\r\n")
    migrate(agent)
    assert tools_text(agent) == ORIGINAL.replace("str-replace = true", "edit = true").replace("\n", "\r\n")


def test_backup_holds_the_original_bytes(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, ORIGINAL)
    result = migrate(agent)
    (backup,) = backups(agent)
    assert result.tools.backup == backup
    assert BACKUP_NAME.fullmatch(shown(backup))
    assert backup.read_bytes() == ORIGINAL.encode()
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.parent.stat().st_mode) == 0o700


def test_second_run_has_nothing_to_do_and_writes_nothing(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, ORIGINAL)
    migrate(agent)
    after_first = tools_text(agent)
    mtime = (agent / "config" / "tools.toml").stat().st_mtime_ns
    result = migrate(agent)
    assert not result.tools.changed
    assert result.tools.backup is None
    assert str(result) == "config/tools.toml: nothing to migrate\nconfig/engine.toml: nothing to migrate"
    assert tools_text(agent) == after_first
    assert (agent / "config" / "tools.toml").stat().st_mtime_ns == mtime
    assert len(backups(agent)) == 1


def test_nothing_to_migrate_makes_no_backup_folder(agent_dir: Path) -> None:
    before = tools_text(agent_dir)
    assert migrate(agent_dir).tools == MigrationResult(agent_dir / "config" / "tools.toml")
    assert tools_text(agent_dir) == before
    assert not (agent_dir / "config" / "backups").exists()


def test_migrations_in_the_same_second_keep_separate_backups(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, "str-replace = true\n")
    migrate(agent)
    (agent / "config" / "tools.toml").write_text("str-replace = false\n")
    migrate(agent)
    contents = sorted(b.read_text() for b in backups(agent))
    assert contents == ["str-replace = false\n", "str-replace = true\n"]
    assert all(BACKUP_NAME.fullmatch(shown(b)) for b in backups(agent))


def test_permissions_are_kept(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, ORIGINAL)
    path = agent / "config" / "tools.toml"
    os.chmod(path, 0o640)
    migrate(agent)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_symlinked_tools_toml_stays_a_symlink(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, "str-replace = true\n")
    shared = tmp_path / "shared-tools.toml"
    (agent / "config" / "tools.toml").rename(shared)
    (agent / "config" / "tools.toml").symlink_to(shared)
    migrate(agent)
    assert (agent / "config" / "tools.toml").is_symlink()
    assert shared.read_text() == "edit = true\n"


def test_migration_turns_a_refused_config_into_a_loadable_one(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, "list-dir = true\nstr-replace = false\n")
    report = cireil.dry_run(agent)
    assert [str(e) for e in report.errors] == [
        "config/tools.toml:2: 'str-replace' was removed in 2.0 and replaced by 'edit'; "
        "run `cireil migrate <agent-dir>` to update this file (it keeps a backup)"
    ]
    migrate(agent)
    assert cireil.dry_run(agent).ok


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("list-dir = true\nstr-replace = 1\n", "config/tools.toml:2: 'str-replace' must be true or false"),
        ('str-replace = "yes"\n', "config/tools.toml:1: 'str-replace' must be true or false"),
        ("[str-replace]\nenabled = true\n", "config/tools.toml:1: 'str-replace' must be true or false"),
        ("str-replace = true\nedit = 'on'\n", "config/tools.toml:2: 'edit' must be true or false"),
        ("list-dir = true\nstr-replace = \n", "config/tools.toml:2: invalid TOML"),
        ("list-dir = true\nlist-dir = false\n", "config/tools.toml:2: invalid TOML"),
    ],
)
def test_errors_name_file_and_line_and_write_nothing(tmp_path: Path, text: str, message: str) -> None:
    agent = agent_with(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        migrate(agent)
    assert str(info.value).startswith(message)
    assert tools_text(agent) == text
    assert backups(agent) == []


def test_not_an_agent_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not an agent directory"):
        migrate(tmp_path)


# -- through the command line ---------------------------------------------------------------------------


def test_cli_migrate_reports_changes_and_backup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = agent_with(tmp_path, ORIGINAL)
    assert main(["migrate", str(agent)]) == 0
    out = capsys.readouterr().out.splitlines()
    (backup,) = backups(agent)
    assert out == [
        "config/tools.toml: replaced 'str-replace = true' with 'edit = true' (line 6)",
        f"backup of the original: {backup}",
        "config/engine.toml: nothing to migrate",
    ]
    assert main(["migrate", str(agent)]) == 0
    assert capsys.readouterr().out == "config/tools.toml: nothing to migrate\nconfig/engine.toml: nothing to migrate\n"


def test_cli_migrate_errors_exit_2_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = agent_with(tmp_path, "list-dir = true\nstr-replace = [1]\n")
    assert main(["migrate", str(agent)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "config/tools.toml:2: 'str-replace' must be true or false to be migrated to 'edit'"
    ]
    assert main(["migrate", str(tmp_path / "missing")]) == 2
    assert "agent directory does not exist" in capsys.readouterr().err


# -- engine.toml: cireil's old [providers.<name>] layout -> the original's top-level provider tables ------------

OLD_ENGINE = """\
# The providers of my agent.
# Keep these comments.

[providers.openai]   # the hosted one
apiBase = "https://api.openai.com/v1"
apiKey = { env = "OPENAI_API_KEY" }  # from the kernel's environment
defaultModel = "gpt-4o-mini"

# per-model settings
[providers.openai.models."gpt-4o-mini"]
contextWindow = 128000   # tokens
"""

NEW_ENGINE = """\
# The providers of my agent.
# Keep these comments.

[openai]   # the hosted one
apiBase = "https://api.openai.com/v1"
apiKey = { env = "OPENAI_API_KEY" }  # from the kernel's environment
defaultModel = "gpt-4o-mini"
isGlobalDefault = true

# per-model settings
[openai.models."gpt-4o-mini"]
contextWindow = 128000   # tokens
"""


def engine_agent(tmp_path: Path, engine: str, tools: str = "list-dir = true\n") -> Path:
    agent = agent_with(tmp_path, tools)
    (agent / "config" / "engine.toml").write_text(engine)
    return agent


def engine_text(agent: Path) -> str:
    return (agent / "config" / "engine.toml").read_text()


def test_old_engine_layout_is_refused_then_migrated_with_comments_kept(tmp_path: Path) -> None:
    agent = engine_agent(tmp_path, OLD_ENGINE)
    assert [str(e) for e in cireil.dry_run(agent).errors] == [
        "config/engine.toml:4: this is cireil's old [providers.<name>] layout, which the original CireilClaw does "
        "not read: providers are top-level tables ([openai]); run `cireil migrate DIR` to rewrite it (comments "
        "kept, a backup first)"
    ]
    result = migrate(agent)
    assert engine_text(agent) == NEW_ENGINE
    assert result.engine.changes == (
        "moved [providers.openai] to [openai] (line 4)",
        "added 'isGlobalDefault = true' to [openai]: the original needs one default provider",
        "kept [openai] apiKey = { env = ... }: cireil reads it, the original CireilClaw does not (it needs the key "
        "itself, or a list of keys)",
    )
    (backup,) = [b for b in backups(agent) if b.name == "engine.toml"]
    assert result.engine.backup == backup
    assert backup.read_text() == OLD_ENGINE
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert cireil.dry_run(agent).ok
    again = migrate(agent)
    assert not again.changed
    assert engine_text(agent) == NEW_ENGINE


def test_several_providers_keep_their_order_and_their_default(tmp_path: Path) -> None:
    old = (
        '[providers.a]\napiBase = "http://127.0.0.1:1/v1"\napiKey = ["k1", "k2"]\ndefaultModel = "m"\n\n'
        '[providers.b]\napiBase = "http://127.0.0.1:2/v1"\ndefaultModel = "n"\nisGlobalDefault = true\n'
        '[providers.b.customHeaders]\nX-Team = "garden"\n'
    )
    agent = engine_agent(tmp_path, old)
    migrate(agent)
    assert engine_text(agent) == old.replace("[providers.", "[")
    assert cireil.dry_run(agent).ok


def test_tools_and_engine_migrate_together(tmp_path: Path) -> None:
    agent = engine_agent(tmp_path, OLD_ENGINE, tools="str-replace = true\n")
    result = migrate(agent)
    assert result.tools.changed and result.engine.changed
    assert tools_text(agent) == "edit = true\n"
    assert sorted(shown(b).split("_", 1)[1] for b in backups(agent)) == [
        "cireil_engine_providers_top_level/engine.toml",
        "cireil_str_replace_to_edit/tools.toml",
    ]


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (
            '[providers.a]\napiBase = "http://h"\ndefaultModel = "m"\n[providers.b]\napiBase = "http://h"\n'
            'defaultModel = "m"\n',
            "config/engine.toml:1: 2 providers and none has isGlobalDefault = true",
        ),
        (
            '[a]\nx = 1\n[providers.a]\napiBase = "http://h"\ndefaultModel = "m"\n',
            "config/engine.toml:1: 'a' is both a top-level key and a provider in [providers.a]",
        ),
        ("[providers.a\n", "config/engine.toml:1: invalid TOML"),
        (
            'providers.a.apiBase = "http://h"\nproviders.a.defaultModel = "m"\n',
            "config/engine.toml:1: cireil cannot rewrite this layout automatically; move each [providers.<name>] "
            "table to [<name>] by hand",
        ),
    ],
)
def test_an_engine_toml_that_cannot_be_migrated_leaves_both_files_alone(
    tmp_path: Path, engine: str, message: str
) -> None:
    agent = engine_agent(tmp_path, engine, tools="str-replace = true\n")
    with pytest.raises(ConfigError) as info:
        migrate(agent)
    assert str(info.value).startswith(message)
    assert engine_text(agent) == engine
    assert tools_text(agent) == "str-replace = true\n"
    assert backups(agent) == []


def test_cli_migrate_rewrites_engine_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = engine_agent(tmp_path, OLD_ENGINE)
    assert main(["migrate", str(agent)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "config/tools.toml: nothing to migrate"
    assert out[1] == "config/engine.toml: moved [providers.openai] to [openai] (line 4)"
    assert out[-1].startswith("backup of the original: ")
    assert out[-1].endswith("_cireil_engine_providers_top_level/engine.toml")


def test_an_inline_providers_table_is_migrated_too(tmp_path: Path) -> None:
    old = '# top\n[providers]\n# inside\nlocal = { apiBase = "http://127.0.0.1:1/v1", defaultModel = "m" }  # tail\n'
    agent = engine_agent(tmp_path, old)
    migrate(agent)
    assert engine_text(agent) == (
        '# top\n# inside\nlocal = { apiBase = "http://127.0.0.1:1/v1", defaultModel = "m", isGlobalDefault = true }'
        "  # tail\n"
    )
    assert cireil.dry_run(agent).ok


@pytest.mark.parametrize(
    ("inline", "migrated"),
    [
        ('{apiBase="http://127.0.0.1:1/v1"}', '{apiBase="http://127.0.0.1:1/v1", isGlobalDefault = true}'),
        ('{ apiBase = "http://127.0.0.1:1/v1" }', '{ apiBase = "http://127.0.0.1:1/v1", isGlobalDefault = true }'),
    ],
)
def test_the_added_default_follows_the_inline_tables_own_spacing(tmp_path: Path, inline: str, migrated: str) -> None:
    agent = engine_agent(tmp_path, f"[providers]\nlocal = {inline}\n")
    migrate(agent)
    assert engine_text(agent) == f"local = {migrated}\n"


def test_a_crlf_engine_file_gets_its_added_default_in_crlf(tmp_path: Path) -> None:
    agent = engine_agent(tmp_path, "")
    old = '[providers.local]\r\napiBase = "http://127.0.0.1:1/v1"\r\ndefaultModel = "m"\r\n'
    (agent / "config" / "engine.toml").write_bytes(old.encode())
    migrate(agent)
    assert (agent / "config" / "engine.toml").read_bytes() == (
        b'[local]\r\napiBase = "http://127.0.0.1:1/v1"\r\ndefaultModel = "m"\r\nisGlobalDefault = true\r\n'
    )
