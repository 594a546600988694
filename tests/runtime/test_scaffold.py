"""The bundled demo agent, `init` and `copy_demo`: a working agent from nothing, owner-only, never overwriting."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import cireil
from cireil.runtime import scaffold
from cireil.runtime.files import frontmatter
from cireil.runtime.files.layout import BLOCK_NAMES
from cireil.runtime.original import runtime_root
from cireil.runtime.scaffold import DirectoryNotEmptyError, copy_demo, demo_source, init
from cireil.runtime.toolkit import registry

CIREIL = str(Path(sys.executable).with_name("cireil"))


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_creates_an_agent_that_dry_runs_clean(tmp_path: Path) -> None:
    agent = init(tmp_path / "wren")
    assert agent == tmp_path / "wren"
    report = cireil.dry_run(agent)
    assert report.issues == []  # no errors and no warnings
    reading = ["read", "read-sections", "open-file", "close-file", "read-skill"]
    assert {"list-dir", "write", "session-info", *reading} <= {t.name for t in report.tools}


def test_init_writes_every_part_of_an_agent(tmp_path: Path) -> None:
    agent = init(tmp_path / "a")
    files = set(tree(agent))
    expected = {
        "core.md",
        "config/tools.toml",
        "config/sandbox.toml",
        *(f"blocks/{name}.md" for name in BLOCK_NAMES),
        "skills/outline-first-editing/SKILL.md",
        "skills/create-skill/SKILL.md",
        "config/engine.toml",
        "workspace/README.md",
        "workspace/garden-handbook.md",
        "workspace/harvest_report.py",
        "workspace/harvest.csv",
        "workspace/notes.txt",
    }
    assert expected <= files
    assert any(f.startswith("memories/") for f in files)
    assert any(f.startswith("tasks/") for f in files)
    assert tree(agent) == {k: v for k, v in tree(Path(str(demo_source()))).items() if "__pycache__" not in k}


def test_init_creates_missing_parents_and_fills_an_existing_empty_directory(tmp_path: Path) -> None:
    assert cireil.dry_run(init(tmp_path / "deep" / "er" / "agent")).ok
    empty = tmp_path / "empty"
    empty.mkdir()
    assert init(empty) == empty
    assert cireil.dry_run(empty).issues == []


def test_init_refuses_a_non_empty_directory_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "mine.txt").write_text("keep me")
    with pytest.raises(DirectoryNotEmptyError, match="not empty"):
        init(target)
    assert tree(target) == {"mine.txt": b"keep me"}


def test_init_refuses_a_hidden_file_too(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / ".git").mkdir()
    with pytest.raises(DirectoryNotEmptyError):
        init(tmp_path / "d")


def test_init_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(DirectoryNotEmptyError, match="not a directory"):
        init(tmp_path / "f")


def test_cli_init_exits_2_on_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a").write_text("")
    proc = subprocess.run([CIREIL, "init", "x"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "cireil: error: x is not empty; choose a new or empty directory"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o077])
def test_init_makes_everything_owner_only(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        agent = init(tmp_path / "private")
    finally:
        os.umask(old)
    for path in [agent, *agent.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {oct(mode)}"


def test_failed_init_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = scaffold._copy_tree

    def copy_then_fail(source, target):
        real(source, target)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scaffold, "_copy_tree", copy_then_fail)
    with pytest.raises(OSError):
        init(tmp_path / "new")
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError):
        init(tmp_path / "empty")
    assert list((tmp_path / "empty").iterdir()) == []


def test_copy_demo_gives_a_fresh_writable_copy_each_time() -> None:
    first, second = copy_demo(), copy_demo()
    assert first != second
    assert first.name == second.name == "demo"
    assert first.parent.name.startswith("cireil-demo-")
    handbook = first / "workspace" / "garden-handbook.md"
    assert os.access(handbook, os.W_OK)
    handbook.write_text("changed")
    (first / "workspace" / "new.txt").write_text("new")
    assert (second / "workspace" / "garden-handbook.md").read_text() != "changed"
    assert not (second / "workspace" / "new.txt").exists()
    assert tree(copy_demo()) == tree(second)


def test_load_demo_calls_tools_on_the_copy() -> None:
    agent = cireil.load_demo()
    try:
        assert agent.slug == "demo"
        listing = agent.call("list-dir", path="/workspace")
        assert {"name": "garden-handbook.md", "type": "file"} in listing["entries"]
        assert agent.call("write", path="/workspace/scratch.txt", content="hi").success
        assert (agent.directory / "workspace" / "scratch.txt").read_text() == "hi"
    finally:
        agent.close()
    assert not (Path(str(demo_source())) / "workspace" / "scratch.txt").exists()


def test_copy_demo_is_removed_when_its_process_exits(tmp_path: Path) -> None:
    code = "from cireil.runtime.scaffold import copy_demo; print(copy_demo())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    made = Path(proc.stdout.strip())
    assert made.name == "demo"
    assert not made.parent.exists()


# -- the demo's content ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> Path:
    return Path(str(demo_source()))


def test_demo_tools_toml_lists_every_builtin_the_original_knows_and_enables_them(demo: Path) -> None:
    data = tomllib.loads((demo / "config" / "tools.toml").read_text())
    # the original refuses a tools.toml naming a tool it does not have (invoke), even as false
    assert set(data) == set(registry.BUILTIN_NAMES) - set(runtime_root.CIREIL_ONLY_TOOLS)
    assert {name for name, on in data.items() if on} == set(registry.BUILTIN_NAMES) - {"invoke"}
    # the original wants a table or false for exec (it refuses `exec = true`); as its init writes it
    assert data["exec"] == {"enabled": True, "timeout": 60000}
    assert all(isinstance(on, bool) for name, on in data.items() if name != "exec")


def test_demo_sandbox_toml(demo: Path) -> None:
    data = tomllib.loads((demo / "config" / "sandbox.toml").read_text())
    assert data["backend"] == "bwrap"
    assert {"ls", "cat", "grep", "python3"} <= set(data["bwrap"]["binaries"])
    assert "mounts" not in data


def test_demo_blocks_and_skill_have_valid_frontmatter(demo: Path) -> None:
    assert not (demo / "core.md").read_text().startswith(("+++", "---"))
    for name in BLOCK_NAMES:
        fields = frontmatter.parse((demo / "blocks" / f"{name}.md").read_text(), frontmatter.BLOCK)
        assert fields["description"].strip()
    skill = frontmatter.parse((demo / "skills/outline-first-editing/SKILL.md").read_text(), frontmatter.SKILL)
    assert skill["name"] == "outline-first-editing"


def test_demo_handbook_is_long_and_has_what_outlines_need(demo: Path) -> None:
    handbook = demo / "workspace" / "garden-handbook.md"
    assert handbook.stat().st_size > 25 * 1024
    assert handbook.stat().st_size < 40 * 1024
    text = handbook.read_text()
    lines = text.splitlines()
    fence = [i for i, line in enumerate(lines) if line.startswith("```")]
    assert len(fence) == 2
    assert any(line.startswith("# ") for line in lines[fence[0] + 1 : fence[1]])  # comments, not headings
    outside = lines[: fence[0]] + lines[fence[1] + 1 :]
    headings = [line for line in outside if re.match(r"#{1,6} ", line)]
    levels = {len(h.split(" ", 1)[0]) for h in headings}
    assert {1, 2, 3, 4} <= levels
    titles = [h.split(" ", 1)[1] for h in headings]
    assert titles.count("Watering") == 2
    assert any(re.match(r"\[[^\]]+\]\([^)]+\)", t) for t in titles)  # a link in a heading
    assert any(line.startswith("|---") for line in lines)  # a table
    assert any(re.match(r"\s*(-|\d+\.) ", line) for line in lines)  # lists


def test_demo_sample_script_runs(demo: Path) -> None:
    workspace = demo / "workspace"
    proc = subprocess.run(
        [sys.executable, "harvest_report.py", "harvest.csv"], cwd=workspace, capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1].split() == ["total", "39.0", "kg"]


def test_demo_has_no_files_the_wheel_would_leave_out(demo: Path) -> None:
    # pyproject's package-data globs ("demo/**/*", "demo/**/.*") do not descend into hidden
    # directories, so a file there would be missing from an installed cireil.
    hidden_dirs = [p for p in demo.rglob(".*") if p.is_dir()]
    assert hidden_dirs == []


# -- what the original CireilClaw's own init writes (upstream-formats.md §1.2, §3.8) -------------------------

ORIGINAL_INIT_FILES = {
    "core.md",
    "config/engine.toml",
    "config/tools.toml",
    "config/sandbox.toml",
    "skills/create-skill/SKILL.md",
    *(f"blocks/{name}.md" for name in ("soul", "identity", "person", "long-term", "style-notes")),
}
ORIGINAL_INIT_DIRS = {"blocks", "config", "memories", "skills", "tasks", "workspace"}


def test_init_writes_every_file_of_the_originals_init_in_its_shape(tmp_path: Path) -> None:
    agent = init(tmp_path / "agents" / "wren")
    assert set(tree(agent)) >= ORIGINAL_INIT_FILES
    assert {p.name for p in agent.iterdir() if p.is_dir()} >= ORIGINAL_INIT_DIRS
    for rel in ORIGINAL_INIT_FILES:
        assert stat.S_IMODE((agent / rel).stat().st_mode) == 0o600
    engine = tomllib.loads((agent / "config" / "engine.toml").read_text())
    assert list(engine) == ["default"]  # one provider named default, as the original's init names it
    default = engine["default"]
    assert {"apiBase", "apiKey", "defaultModel", "isGlobalDefault", "kind"} <= set(default)
    assert default["isGlobalDefault"] is True and default["kind"] == "openai"
    assert isinstance(default["apiKey"], str)  # the original does not read cireil's { env = ... }
    sandbox = tomllib.loads((agent / "config" / "sandbox.toml").read_text())
    assert sandbox["backend"] == "bwrap" and sandbox["bwrap"]["binaries"]
    for name in BLOCK_NAMES:
        text = (agent / "blocks" / f"{name}.md").read_text()
        assert text.startswith("+++\n")  # TOML frontmatter, as the original's blocks
        assert frontmatter.parse(text, frontmatter.BLOCK)["description"].strip()
    skill = frontmatter.parse((agent / "skills/create-skill/SKILL.md").read_text(), frontmatter.SKILL)
    assert skill["name"] == "create-skill" and skill["description"].strip()
    assert not (agent / "core.md").read_text().startswith(("+++", "---"))


def test_init_in_a_runtime_root_writes_migrations_json_with_every_id(tmp_path: Path) -> None:
    root = tmp_path / "home" / ".cireilclaw"
    agent = init(root / "agents" / "wren")
    text = (root / "config" / "migrations.json").read_text()
    assert text == (
        '{\n  "applied": [\n'
        '    "20260305000000_tool_rename_discord_attachments",\n'
        '    "20260309000000_skills_agentskills_format",\n'
        '    "20260311120000_tasks_folder",\n'
        '    "20260322000000_assistant_message_ids",\n'
        '    "20260406000000_engine_providers",\n'
        '    "20260412000000_brave_search_plugin",\n'
        '    "20260425000000_rename_anthropic_oauth",\n'
        '    "20260811000000_move_exec_binaries_to_bwrap"\n'
        "  ]\n}"
    )  # JSON.stringify(value, undefined, 2): two-space indent, no final newline
    for folder in (root, root / "config", root / "agents", agent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert [p.name for p in (root / "agents").iterdir()] == ["wren"]  # nothing else the original takes for an agent
    assert sorted(p.name for p in root.iterdir()) == ["agents", "config"]


def test_init_never_touches_an_existing_migrations_json(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    mine = '{"applied": ["20260305000000_tool_rename_discord_attachments"], "mine": true}'
    (root / "config" / "migrations.json").write_text(mine)
    os.chmod(root / "config" / "migrations.json", 0o644)
    notes: list[str] = []
    init(root / "agents" / "a", notes=notes)
    assert (root / "config" / "migrations.json").read_text() == mine
    assert stat.S_IMODE((root / "config" / "migrations.json").stat().st_mode) == 0o644
    assert notes == []


def test_a_standalone_agent_gets_no_root_files(tmp_path: Path) -> None:
    init(tmp_path / "solo")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["solo"]


def test_failed_init_in_a_new_root_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scaffold, "_copy_tree", fail)
    with pytest.raises(OSError):
        init(tmp_path / "root" / "agents" / "a")
    assert list(tmp_path.iterdir()) == []


def test_cli_init_in_a_root_says_what_it_wrote(tmp_path: Path) -> None:
    proc = subprocess.run([CIREIL, "init", "r/agents/wren"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"created agent 'wren' in {tmp_path / 'r' / 'agents' / 'wren'}"
    assert lines[1] == (
        f"wrote {tmp_path / 'r' / 'config' / 'migrations.json'}: every config migration of the original "
        "CireilClaw marked as applied"
    )


def test_a_demo_copy_reads_its_key_from_the_environment_while_init_keeps_the_originals_literal(tmp_path):
    from cireil.runtime.scaffold import copy_demo, is_demo_copy

    demo = copy_demo()
    engine = tomllib.loads((demo / "config" / "engine.toml").read_text())
    assert engine["default"]["apiKey"] == {"env": "OPENAI_API_KEY"}
    assert is_demo_copy(demo) and not is_demo_copy(init(tmp_path / "agents" / "wren"))
    assert (
        tomllib.loads((tmp_path / "agents" / "wren" / "config" / "engine.toml").read_text())["default"]["apiKey"]
        == "not-needed"
    )
