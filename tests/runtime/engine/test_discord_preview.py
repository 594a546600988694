"""The request a Discord session gets, previewed read-only (`agent.prompt(session=...)`, `%cireil prompt`): the
original's platform lines for the channel, and the conditional blocks its guild or channel loads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import cireil
from cireil.runtime.sessions.store import SessionReadOnly
from cireil.testing.scripted_llm import ScriptedLLM
from turnkit import turn_agent

GUILD = "1174109840998400016"
CHANNEL = "1425768080998400016"
OTHER_CHANNEL = "1425768080998400099"
DM = "1425000000000000001"
CONDITIONS = f"""\
[blocks.guild-rules]
action = "load"
when = "discord:guild:{GUILD}"

[blocks.channel-lore]
action = "load"
when = "discord:channel:{CHANNEL}"

[blocks.dm-only]
action = "load"
when = "discord:dm"
"""
BLOCKS = {
    "guild-rules": ("Rules of the guild", "No spoilers in this guild."),
    "channel-lore": ("What this channel is about", "This channel plans the garden."),
    "dm-only": ("Only in direct messages", "Be personal."),
}


@pytest.fixture
def agent(tmp_path: Path, llm: ScriptedLLM):
    path = turn_agent(tmp_path, llm.base_url)
    (path / "config" / "conditions.toml").write_text(CONDITIONS)
    (path / "blocks" / "conditional").mkdir()
    for name, (description, body) in BLOCKS.items():
        (path / "blocks" / "conditional" / f"{name}.md").write_text(
            f'+++\ndescription = "{description}"\n+++\n{body}\n'
        )
    a = cireil.load(path)
    yield a
    a.close()


def _conditional(system: str) -> list[str]:
    return [name for name in BLOCKS if f"<conditional/{name}>" in system]


def _metadata(system: str) -> list[str]:
    return system[system.rindex("<metadata>\nThe current session") :].splitlines()


def _rows(agent) -> list[str]:
    with sqlite3.connect(agent.directory / "sessions.db") as db:
        return [r[0] for r in db.execute("SELECT id FROM sessions")]


def test_a_guild_channel_gets_its_guild_and_channel_blocks_and_the_originals_lines(agent, llm):
    rows = _rows(agent)
    prepared = agent.prompt(session=f"discord:{CHANNEL}|{GUILD}")
    system = prepared.assembled.system
    assert _conditional(system) == ["guild-rules", "channel-lore"]
    assert (
        "<conditional/channel-lore>\n<description>\nWhat this channel is about\n</description>\n<metadata>\n"
        "- chars_current: 31\n- file_path: /blocks/conditional/channel-lore.md\n- conditional: true\n</metadata>\n"
        "<content>\nThis channel plans the garden.\n</content>\n</conditional/channel-lore>"
    ) in system
    assert _metadata(system) == [
        "<metadata>",
        "The current session is on the platform: discord",
        f"The channel id is: {CHANNEL}",
        "This is considered a SFW session",
        "- reactions supported: true",
        "- file attachments in respond supported: true",
        "- attachment downloads supported: true",
        "- video supported: false",
        "</metadata>",
    ]
    assert prepared.body["messages"][0] == {"role": "system", "content": system}
    assert prepared.body["prompt_cache_key"] == f"discord:{CHANNEL}|{GUILD}"
    assert llm.requests == [] and _rows(agent) == rows  # a preview: nothing sent, nothing stored


def test_another_channel_of_the_guild_and_a_dm_get_their_own_blocks(agent):
    assert _conditional(agent.prompt(session=f"discord:{OTHER_CHANNEL}|{GUILD}").assembled.system) == ["guild-rules"]
    dm = agent.prompt(session=f"discord:{DM}").assembled.system
    assert _conditional(dm) == ["dm-only"]
    assert _metadata(dm)[2:4] == [f"The channel id is: {DM}", "SFW/NSFW depending on the user"]


def test_a_turn_there_is_still_refused_and_leaves_nothing(agent, llm):
    rows = _rows(agent)
    with pytest.raises(SessionReadOnly, match="Discord"):
        agent.turn("hello", session=f"discord:{CHANNEL}|{GUILD}")
    assert llm.requests == [] and _rows(agent) == rows


def test_the_magic_previews_a_discord_session(agent, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from magicshell import loaded, run

    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    try:
        loaded(shell, agent.directory)
        shown = run(shell, f"%cireil prompt --session 'discord:{CHANNEL}|{GUILD}'").displayed
        text = "\n".join(b.get("text/plain", "") for b in shown)
        html = "\n".join(b.get("text/html", "") for b in shown)
        assert f"session discord:{CHANNEL}|{GUILD}" in text
        assert "adds /blocks/conditional/guild-rules.md" in text and "adds /blocks/conditional/channel-lore.md" in text
        assert "does not add /blocks/conditional/dm-only.md" in text
        # the system prompt in full, in the view's HTML
        assert f"The current session is on the platform: discord\nThe channel id is: {CHANNEL}\n" in html
        assert "&lt;conditional/guild-rules&gt;" in html and "No spoilers in this guild." in html
        assert "&lt;conditional/dm-only&gt;" not in html
    finally:
        if "cireil" in shell.extension_manager.loaded:
            shell.extension_manager.unload_extension("cireil")
        InteractiveShell.clear_instance()


def test_a_discord_session_the_original_stored_previews_its_history_and_changes_nothing(tmp_path, llm):
    import upstream_db as up

    directory = turn_agent(tmp_path, llm.base_url)
    up.create_original_db(directory / "sessions.db")
    up.fill(directory / "sessions.db", directory)
    before = up.snapshot(directory / "sessions.db")
    agent = cireil.load(directory)
    try:
        prepared = agent.prompt(session=up.GUILD)
        channel = up.GUILD[len("discord:") :].split("|")[0]
        assert _metadata(prepared.assembled.system)[1:4] == [
            "The current session is on the platform: discord",
            f"The channel id is: {channel}",
            "This is considered a SFW session",  # the row's isNsfw (false), with its guild id
        ]
        # its stored history as the original sends it: here the range its topic summary stands for
        sent = str(prepared.body["messages"])
        assert "Robin asked about tomato care; notes say water each morning." in sent
        dm = agent.prompt(session=up.DM).assembled.system
        dm_channel = up.DM[len("discord:") :]
        assert _metadata(dm)[2:4] == [f"The channel id is: {dm_channel}", "SFW/NSFW depending on the user"]
    finally:
        agent.close()
    assert up.snapshot(directory / "sessions.db") == before
