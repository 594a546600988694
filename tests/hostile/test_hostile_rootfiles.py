"""Files the runtime reads by itself from a root exec can write (skills, tasks/HEARTBEAT.md) never lead out.

/skills and /tasks are bound read-write into the exec sandbox, so a command can plant
`ln -s <host file> /skills/x/SKILL.md`. The symlink's text is resolved on the host when the runtime
builds the system prompt or the heartbeat's message: without care, any file the kernel can read
(an SSH key, engine.toml with its API keys) would be sent to the model. These reads resolve like a
file tool's: a symlink that stays inside its root is fine, one that leads out is refused. Blocks
(not mounted in exec, written only by file tools that never make symlinks) are the person's: their
symlinks are followed, but a FIFO or a huge file there never hangs or floods a turn.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.jobs.heartbeat import tasks_text
from conditionskit import TUI, conditions_agent
from conftest import make_agent
from exec_agent import BINARIES, exec_agent
from fifokit import within

SECRET = "HOST-SECRET-LINE"
SECRET_BLOCK = f'+++\ndescription = "{SECRET} description"\n+++\n{SECRET}\n'


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(SECRET_BLOCK)
    (folder / "skill").mkdir()
    (folder / "skill" / "SKILL.md").write_text(f"---\nname: evil\ndescription: {SECRET}\n---\nbody\n")
    return folder


def _swap_for_link(path: Path, target: Path) -> None:
    path.unlink()
    os.symlink(target, path)


def test_the_exec_writable_roots_are_the_ones_exec_binds():
    from cireil.runtime.exec.sandbox import ROOT_BINDS
    from cireil.runtime.files.paths import EXEC_WRITABLE

    assert set(EXEC_WRITABLE) == set(ROOT_BINDS)


def test_a_skill_linked_to_another_folder_inside_skills_still_works(tmp_path):
    agent_dir = make_agent(tmp_path)
    real = agent_dir / "skills" / "real"
    real.mkdir()
    (real / "SKILL.md").write_text("---\nname: real\ndescription: a linked skill\n---\nbody\n")
    os.symlink("real", agent_dir / "skills" / "alias")
    agent = cireil.load(agent_dir)
    try:
        assert {"real", "alias"} <= set(agent.prompt().assembled.prompt.skills)
    finally:
        agent.close()


def test_a_skill_linked_out_is_omitted(tmp_path, outside):
    agent_dir = make_agent(tmp_path)
    os.symlink(outside / "skill", agent_dir / "skills" / "evil")
    agent = cireil.load(agent_dir)
    try:
        prepared = agent.prompt()
        assert SECRET not in prepared.assembled.system and "evil" not in prepared.assembled.prompt.skills
        assert any("skills/evil/SKILL.md" in w and "leads out" in w for w in prepared.assembled.prompt.warnings)
    finally:
        agent.close()
    report = cireil.dry_run(agent_dir)
    assert any("skills/evil/SKILL.md" in str(i) and "leads out" in str(i) for i in report.issues)


def test_a_conditional_block_that_is_a_fifo_fails_the_turn_instead_of_hanging(tmp_path):
    agent_dir = conditions_agent(tmp_path)
    fifo = agent_dir / "blocks" / "conditional" / "after-hours.md"
    fifo.unlink()
    os.mkfifo(fifo)

    def load_and_prompt() -> None:
        agent = cireil.load(agent_dir)
        try:
            assert any("after-hours.md" in str(w) and "not a regular file" in str(w) for w in agent.warnings)
            agent.act_as(TUI)
            agent.prompt()
        finally:
            agent.close()

    with pytest.raises(ConfigError, match=r"after-hours\.md: cannot be read: .*not a regular file"):
        within(30, load_and_prompt, fifo)


def test_the_heartbeat_tasks_file_is_read_inside_tasks_only(tmp_path, outside):
    agent_dir = make_agent(tmp_path)
    tasks = agent_dir / "tasks"
    tasks.mkdir(exist_ok=True)
    (tasks / "HEARTBEAT.md").write_text("water the plants\n")
    assert tasks_text(agent_dir) == "water the plants"
    _swap_for_link(tasks / "HEARTBEAT.md", outside / "secret.md")
    assert tasks_text(agent_dir) == ""
    (tasks / "HEARTBEAT.md").unlink()
    os.mkfifo(tasks / "HEARTBEAT.md")  # would block the heartbeat (and the runtime loop) if opened
    assert within(30, lambda: tasks_text(agent_dir), tasks / "HEARTBEAT.md") == ""


@pytest.mark.skipif(not cireil.sandbox_available(), reason="needs bubblewrap")
def test_a_link_planted_from_exec_does_not_put_a_host_file_into_the_prompt(tmp_path, outside):
    agent = cireil.load(exec_agent(tmp_path, binaries=[*BINARIES, "ln", "mkdir"]))
    try:
        host = outside / "skill" / "SKILL.md"
        script = f"mkdir /skills/evil && ln -s {host} /skills/evil/SKILL.md && echo planted"
        data = agent.call("exec", command="sh", args=["-c", script]).data
        assert data["stdout"] == "planted\n", data
        assert os.path.islink(agent.directory / "skills" / "evil" / "SKILL.md")
        prepared = agent.prompt()
        assert SECRET not in prepared.assembled.system and "evil" not in prepared.assembled.prompt.skills
    finally:
        agent.close()
