"""An agent inside a runtime root shared with the original CireilClaw: `cireil dry-run` and `%cireil dry-run`
warn about what the original would refuse at startup (upstream-formats.md §0, §3.7, §3.8, §7), naming the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cireil
from cireil.runtime.original.runtime_root import MIGRATION_IDS, migrations_text
from cireil.runtime.scaffold import init
from magicshell import loaded, run

CIREIL = str(Path(sys.executable).with_name("cireil"))
DISCORD = 'token = "MTQy.x.y"\nownerId = "402981735266648064"\n'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    init(tmp_path / "root" / "agents" / "wren")
    return tmp_path / "root"


def warnings(agent: Path) -> list[str]:
    report = cireil.dry_run(agent)
    assert report.ok, report.errors
    # the note that discord.toml has no effect in cireil is tested in test_conditions.py (unhonoured files)
    return [str(w) for w in report.warnings if "cireil has no Discord channel" not in w.message]


def test_a_fresh_root_warns_only_about_the_missing_discord_config(root: Path) -> None:
    assert warnings(root / "agents" / "wren") == [
        "config/channels/discord.toml: warning: missing: `cireilclaw run` starts Discord for every agent and "
        'refuses to start without it (token = "...", ownerId = "..."); `cireilclaw tui` does not need it'
    ]
    channels = root / "agents" / "wren" / "config" / "channels"
    channels.mkdir()
    (channels / "discord.toml").write_text(DISCORD)
    assert warnings(root / "agents" / "wren") == []


def test_a_standalone_agent_is_not_checked_against_the_original(tmp_path: Path) -> None:
    assert warnings(init(tmp_path / "solo")) == []


@pytest.fixture
def agent(root: Path) -> Path:
    agent = root / "agents" / "wren"
    (agent / "config" / "channels").mkdir()
    (agent / "config" / "channels" / "discord.toml").write_text(DISCORD)
    return agent


def test_missing_migrations_json(root: Path, agent: Path) -> None:
    (root / "config" / "migrations.json").unlink()
    (found,) = warnings(agent)
    assert found.startswith(f"{root / 'config' / 'migrations.json'}: warning: missing: the original CireilClaw")
    assert "20260406000000_engine_providers rewrites a modern engine.toml" in found


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "unreadable"),
        ("[]", 'has no "applied" list'),
        ('{"applied": "all"}', 'has no "applied" list'),
        (
            json.dumps({"applied": list(MIGRATION_IDS[:4])}),
            "4 migration(s) not applied (20260406000000_engine_providers, 20260412000000_brave_search_plugin, "
            "20260425000000_rename_anthropic_oauth, 20260811000000_move_exec_binaries_to_bwrap)",
        ),
    ],
)
def test_stale_or_broken_migrations_json(root: Path, agent: Path, content: str, expected: str) -> None:
    (root / "config" / "migrations.json").write_text(content)
    (found,) = warnings(agent)
    assert found.startswith(f"{root / 'config' / 'migrations.json'}: warning: ")
    assert expected in found
    assert (root / "config" / "migrations.json").read_text() == content  # reported, never rewritten


def test_extra_ids_and_keys_are_fine(root: Path, agent: Path) -> None:
    data = {"applied": [*MIGRATION_IDS, "29990101000000_future"], "note": "x"}
    (root / "config" / "migrations.json").write_text(json.dumps(data))
    assert warnings(agent) == []
    (root / "config" / "migrations.json").write_text(migrations_text())
    assert warnings(agent) == []


def test_a_folder_under_agents_that_is_not_an_agent(root: Path, agent: Path) -> None:
    (root / "agents" / "notes").mkdir()
    (root / "agents" / "README.md").write_text("files are not agents")
    (found,) = warnings(agent)
    assert found.startswith(f"{root / 'agents' / 'notes'}: warning: the original CireilClaw takes every folder")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            'token = ""\nownerId = "1"\n',
            "1: warning: the original CireilClaw refuses to start: 'token' must be a non-empty string",
        ),
        (
            'token = "t"\nownerId = "me"\n',
            "2: warning: the original CireilClaw refuses to start: 'ownerId' must be a string holding the owner's "
            "user id",
        ),
        (
            'token = "t"\nownerId = "1"\nwhitelist = []\n',
            "3: warning: the original CireilClaw refuses to start: unknown key 'whitelist'",
        ),
        ("token = \n", "1: warning: the original CireilClaw cannot read it"),
    ],
)
def test_a_discord_toml_the_original_refuses(agent: Path, content: str, expected: str) -> None:
    (agent / "config" / "channels" / "discord.toml").write_text(content)
    (found,) = warnings(agent)
    assert found.startswith(f"config/channels/discord.toml:{expected}")


def test_tools_toml_entries_the_original_refuses(agent: Path) -> None:
    tools = agent / "config" / "tools.toml"
    text = tools.read_text()
    tools.write_text(text.replace("exec = { enabled = true, timeout = 60000 }", "invoke = true\nexec = true"))
    lines = tools.read_text().splitlines()
    found = warnings(agent)
    assert found == [
        f"config/tools.toml:{lines.index('invoke = true') + 1}: warning: 'invoke' is a cireil tool the original "
        "CireilClaw does not have: its turns fail on any tools.toml naming it, even as false",
        f"config/tools.toml:{lines.index('exec = true') + 1}: warning: the original CireilClaw refuses "
        "'exec = true'; write it as an [exec] table with enabled = true",
    ]


def test_engine_toml_problems_are_errors_naming_file_and_line(agent: Path) -> None:
    engine = agent / "config" / "engine.toml"
    engine.write_text(engine.read_text().replace("isGlobalDefault = true\n", ""))
    report = cireil.dry_run(agent)
    assert not report.ok
    assert [str(e).split(": ")[0] for e in report.errors] == ["config/engine.toml:7"]
    assert "there is no global default provider" in str(report.errors[0])


def test_cli_dry_run_prints_the_warnings_and_exits_0(root: Path) -> None:
    proc = subprocess.run([CIREIL, "dry-run", "agents/wren"], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("config/channels/discord.toml: warning: missing")
    assert "1 warning (see above)" in proc.stdout


def test_magic_dry_run_shows_the_warnings(shell, root: Path) -> None:
    agent = root / "agents" / "wren"
    (root / "config" / "migrations.json").unlink()
    loaded(shell, agent)
    (bundle,) = run(shell, "%cireil dry-run").displayed
    text = bundle["text/plain"]
    assert "config/channels/discord.toml: warning: missing" in text
    assert f"{root / 'config' / 'migrations.json'}: warning: missing" in text


def test_cli_dry_run_on_the_root_checks_every_agent_and_says_root_problems_once(root: Path, agent: Path) -> None:
    init(root / "agents" / "second")
    (root / "agents" / "second" / "config" / "channels").mkdir()
    (root / "agents" / "second" / "config" / "channels" / "discord.toml").write_text(DISCORD)
    (root / "config" / "migrations.json").unlink()
    proc = subprocess.run([CIREIL, "dry-run", str(root)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "agents/second: valid agent (20 enabled tools)",
        "agents/wren: valid agent (20 enabled tools)",
    ]
    (line,) = [x for x in proc.stderr.splitlines() if "cireil has no Discord channel" not in x]
    assert line.startswith(f"{root / 'config' / 'migrations.json'}: warning: missing")
    (root / "agents" / "second" / "config" / "channels" / "discord.toml").unlink()
    (root / "agents" / "second" / "config" / "engine.toml").write_text("[x]\n")
    proc = subprocess.run([CIREIL, "dry-run", str(root)], capture_output=True, text=True)
    assert proc.returncode == 2
    err = proc.stderr.splitlines()
    assert "agents/second/config/engine.toml:1: 'x.apiBase' is required" in err
    assert any(e.startswith("agents/second/config/channels/discord.toml: warning: missing") for e in err)
    assert "agents/second: invalid agent (3 errors)" in proc.stdout.splitlines()
