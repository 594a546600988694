"""Configuration files the runtime re-reads while it runs, planted as FIFOs: nothing blocks.

Loading and dry-run already refuse a FIFO config file; these are the reads after load: the job
runner's check of cron.toml and heartbeat.toml (on the runtime loop, where a blocked read stops every
call of the agent), the runtime root's system.toml (read for every request), and the session store's
look at which sessions the original runtime's jobs write.
"""

from __future__ import annotations

import os

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from conftest import make_agent
from fifokit import within


def test_a_fifo_cron_toml_does_not_stop_the_runtime_loop(tmp_path):
    agent_dir = make_agent(tmp_path)
    (agent_dir / "config" / "heartbeat.toml").write_text("enabled = false\n")  # the job runner starts
    fifo = agent_dir / "config" / "cron.toml"
    os.mkfifo(fifo)
    agent = cireil.load(agent_dir)
    try:
        assert agent.jobs.started
        result = within(30, lambda: agent.call("list-dir", path="/workspace"), fifo)
        assert result.success

        def problems() -> list[str]:
            agent.jobs.reload()
            return agent.jobs.problems

        assert any("config/cron.toml" in p and "not a regular file" in p for p in within(30, problems, fifo))
    finally:
        agent.close()


def test_a_fifo_system_toml_in_the_runtime_root_is_an_error_not_a_hang(tmp_path):
    from cireil.runtime.engine.timefmt import load_timezone

    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    fifo = root / "config" / "system.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"config/system\.toml: cannot be read: not a regular file"):
        within(30, lambda: load_timezone(root), fifo)


def test_the_session_store_reads_the_job_files_without_blocking(tmp_path):
    from cireil.runtime.sessions import SessionStore

    agent_dir = make_agent(tmp_path)
    (agent_dir / "config" / "heartbeat.toml").write_text('enabled = true\ntarget = "discord:1"\n')
    fifo = agent_dir / "config" / "cron.toml"
    os.mkfifo(fifo)
    store = SessionStore.for_agent(agent_dir)
    try:
        found = within(30, store._run_targets, fifo)
    finally:
        store.close()
    assert found == [("the heartbeat (config/heartbeat.toml)", "discord:1")]


def test_dry_run_of_an_agent_in_a_runtime_root_with_fifos_there_finishes(tmp_path):
    (tmp_path / "agents").mkdir()
    agent_dir = make_agent(tmp_path / "agents")
    (tmp_path / "config").mkdir()
    fifos = [tmp_path / "config" / "migrations.json", agent_dir / "config" / "channels" / "discord.toml"]
    fifos[1].parent.mkdir(parents=True)
    for fifo in fifos:
        os.mkfifo(fifo)
    report = within(30, lambda: cireil.dry_run(agent_dir), fifos[0])
    shown = [str(i) for i in report.issues]
    assert any("migrations.json" in s and "not a regular file" in s for s in shown), shown
    assert any("discord.toml" in s and "not a regular file" in s for s in shown), shown
    (agent_dir / "config" / "tools.toml").unlink()
    os.mkfifo(agent_dir / "config" / "tools.toml")
    report = within(30, lambda: cireil.dry_run(agent_dir), agent_dir / "config" / "tools.toml")
    assert any("config/tools.toml" in str(i) and "not a regular file" in str(i) for i in report.errors)


def test_fifo_recorder_and_plugin_settings_are_errors_not_hangs(tmp_path):
    from types import SimpleNamespace

    from cireil.runtime.plugins.services import settings as plugin_settings
    from cireil.runtime.recorder.settings import SettingsError, load_settings

    agent_dir = make_agent(tmp_path)
    fifo = agent_dir / "config" / "cireil.toml"
    os.mkfifo(fifo)
    with pytest.raises(SettingsError, match=r"config/cireil\.toml.*not a regular file"):
        within(30, lambda: load_settings(agent_dir), fifo)
    (agent_dir / "config" / "plugins").mkdir()
    fifo = agent_dir / "config" / "plugins" / "weather.toml"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        within(30, lambda: plugin_settings(SimpleNamespace(agent_dir=agent_dir), "weather"), fifo)
