"""The system prompt (reference §7.1), the metadata message (§7.3) and their assembly with the history."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from cireil.runtime import scaffold
from cireil.runtime.base.errors import CireilError, ConfigError
from cireil.runtime.config.engine_config import ModelConfig as Model  # what a turn passes
from cireil.runtime.engine.assemble import assemble
from cireil.runtime.engine.history import TokenCache, estimate_system, estimate_tokens
from cireil.runtime.engine.prompt import (
    PRUNE_WARNED_KEY,
    build_system_prompt,
    context_usage,
    metadata_text,
    usage_line,
)
from cireil.runtime.files.layout import BLOCK_NAMES, AgentLayout
from cireil.runtime.files.paths import SandboxPaths
from cireil.runtime.sessions import messages as m
from cireil.runtime.sessions.state import Session, platform_of

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 5, 1, 10, 0, 0, tzinfo=UTC)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    return scaffold.init(tmp_path / "agents" / "wren")


def _layout(agent: Path) -> AgentLayout:
    return AgentLayout.find(agent)


def _session(session_id: str = "notebook") -> Session:
    return Session(session_id, platform=platform_of(session_id))


def _write_known_agent(agent: Path) -> None:
    """Replace the demo's instructions and blocks by small known ones, keeping everything else."""
    (agent / "core.md").write_text("\n  Be brief.\n\n")
    for name in BLOCK_NAMES:
        (agent / "blocks" / f"{name}.md").write_text(f'+++\ndescription = "  {name} things "\n+++\n{name} body\n')


def test_system_prompt_golden(agent: Path) -> None:
    _write_known_agent(agent)
    text = build_system_prompt(_layout(agent), _session()).text
    expected = ["<base_instructions>", "Be brief.", "</base_instructions>", "<memory_blocks>"]
    expected += ["The following blocks are engaged in your memory:", ""]
    for name in ("soul", "identity", "person", "long-term", "style-notes"):
        expected += [
            f"<{name}>",
            "<description>",
            f"{name} things",
            "</description>",
            "<metadata>",
            f"- chars_current: {len(name) + len(' body') + 1}",
            f"- file_path: /blocks/{name}.md",
            "</metadata>",
            "<content>",
            f"{name} body",
            "</content>",
            f"</{name}>",
            "",
        ]
    expected += [
        "</memory_blocks>",
        "<skills>",
        '<skill slug="create-skill">',
        "<description>Write down a procedure that worked as a new skill, so the next conversation can reuse it."
        "</description>",
        "</skill>",
        '<skill slug="outline-first-editing">',
        "<description>Change one part of a long document without reading or rewriting all of it.</description>",
        "</skill>",
        "</skills>",
        "<metadata>",
        "The current session is on the platform: remote",
        "This is a notebook session with your person through cireil (Jupyter).",
        "- reactions supported: true",
        "- file attachments in respond supported: true",
        "- attachment downloads supported: true",
        "- video supported: false",
        "</metadata>",
    ]
    assert text == "\n".join(expected)


def test_demo_agent_prompt_shows_its_real_files(agent: Path) -> None:
    prompt = build_system_prompt(_layout(agent), _session())
    core = (agent / "core.md").read_text()
    assert prompt.text.startswith("<base_instructions>\n" + core.strip() + "\n</base_instructions>\n")
    soul_body = (agent / "blocks" / "soul.md").read_text().split("+++\n", 2)[2]
    assert f"<metadata>\n- chars_current: {len(soul_body)}\n- file_path: /blocks/soul.md\n</metadata>" in prompt.text
    positions = [prompt.text.index(f"\n<{name}>\n") for name in BLOCK_NAMES]
    assert positions == sorted(positions)
    assert prompt.skills == ["create-skill", "outline-first-editing"] and prompt.warnings == []
    assert "<conditional/" not in prompt.text  # conditions.toml is not supported: nothing engages


def _skill(agent: Path, slug: str, text: str) -> None:
    (agent / "skills" / slug).mkdir(parents=True, exist_ok=True)
    (agent / "skills" / slug / "SKILL.md").write_text(text)


def test_skills_in_directory_name_order_and_invalid_ones_omitted(agent: Path) -> None:
    _skill(agent, "zeta", "---\nname: zeta\ndescription: Last one.\n---\nbody\n")
    _skill(agent, "alpha", "---\nname: alpha\ndescription: First one.\n---\n")
    _skill(agent, "Upper", "---\nname: upper\ndescription: Capitals sort first.\n---\n")
    _skill(agent, "broken", "---\nname: broken\n---\nno description\n")
    _skill(agent, "notyaml", "no frontmatter at all\n")
    (agent / "skills" / "empty-dir").mkdir()
    prompt = build_system_prompt(_layout(agent), _session())
    assert prompt.skills == ["Upper", "alpha", "create-skill", "outline-first-editing", "zeta"]
    section = prompt.text[prompt.text.index("<skills>") : prompt.text.index("</skills>")]
    assert '<skill slug="alpha">\n<description>First one.</description>\n</skill>' in section
    assert "broken" not in section and "notyaml" not in section and "empty-dir" not in section
    assert [w.split(":")[0] for w in prompt.warnings] == ["skills/broken/SKILL.md", "skills/notyaml/SKILL.md"]


def test_skill_fixed_on_disk_comes_back(agent: Path) -> None:
    _skill(agent, "later", "---\nname: later\n---\n")
    assert "later" not in build_system_prompt(_layout(agent), _session()).skills
    _skill(agent, "later", "---\nname: later\ndescription: Fixed now.\n---\n")
    assert "later" in build_system_prompt(_layout(agent), _session()).skills


def test_no_valid_skills_means_no_skills_section(agent: Path) -> None:
    (agent / "skills" / "outline-first-editing" / "SKILL.md").unlink()
    (agent / "skills" / "create-skill" / "SKILL.md").unlink()
    text = build_system_prompt(_layout(agent), _session()).text
    assert "<skills>" not in text
    assert "</memory_blocks>\n<metadata>\n" in text


def test_missing_or_invalid_base_files_are_config_errors_naming_each_file(agent: Path) -> None:
    (agent / "blocks" / "person.md").unlink()
    (agent / "blocks" / "style-notes.md").write_text("no frontmatter\n")
    (agent / "core.md").unlink()
    with pytest.raises(ConfigError) as err:
        build_system_prompt(_layout(agent), _session())
    files = [issue.file for issue in err.value.issues]
    assert files == ["core.md", "blocks/person.md", "blocks/style-notes.md"]
    assert "invalid frontmatter" in str(err.value)


def test_block_without_description_is_an_error(agent: Path) -> None:
    (agent / "blocks" / "soul.md").write_text('+++\ntitle = "x"\n+++\nbody\n')
    with pytest.raises(ConfigError, match=r"blocks/soul\.md"):
        build_system_prompt(_layout(agent), _session())


def _metadata_section(text: str) -> str:
    return text[text.rindex("<metadata>\nThe current session") :]


def test_internal_sessions_have_no_capabilities(agent: Path) -> None:
    cron = _metadata_section(build_system_prompt(_layout(agent), _session("cron:wren:daily-digest")).text)
    assert cron == (
        "<metadata>\nThe current session is on the platform: internal\n"
        "This is an internal cron session (job ID: wren:daily-digest)\n"  # upstream-formats §0
        "- reactions supported: false\n- file attachments in respond supported: false\n"
        "- attachment downloads supported: false\n- video supported: false\n</metadata>"
    )
    named = _metadata_section(build_system_prompt(_layout(agent), _session("internal:planning")).text)
    assert "This is a persistent internal session\n- reactions supported: false\n" in named


def test_vision_and_video_lines_only_when_unsupported(agent: Path) -> None:
    layout, session = _layout(agent), _session()
    both = build_system_prompt(layout, session, supports_vision=False, supports_video=False).text
    assert both.endswith("- vision supported: false\n- video supported: false\n</metadata>")
    neither = build_system_prompt(layout, session, supports_vision=True, supports_video=True).text
    assert "supported: false" not in neither


def _discord_section(agent: Path, session: Session) -> list[str]:
    return _metadata_section(build_system_prompt(_layout(agent), session).text).splitlines()


DISCORD_CAPABLE = [
    "- reactions supported: true",
    "- file attachments in respond supported: true",
    "- attachment downloads supported: true",
    "- video supported: false",
    "</metadata>",
]


def test_a_discord_guild_session_has_the_originals_channel_lines(agent: Path) -> None:
    assert _discord_section(agent, _session("discord:1425768080998400016|1174109840998400016")) == [
        "<metadata>",
        "The current session is on the platform: discord",
        "The channel id is: 1425768080998400016",
        "This is considered a SFW session",
        *DISCORD_CAPABLE,
    ]


def test_a_discord_dm_depends_on_the_user(agent: Path) -> None:
    assert _discord_section(agent, _session("discord:1425000000000000001")) == [
        "<metadata>",
        "The current session is on the platform: discord",
        "The channel id is: 1425000000000000001",
        "SFW/NSFW depending on the user",
        *DISCORD_CAPABLE,
    ]


def test_a_discord_sessions_stored_meta_gives_its_thread_parent_and_nsfw(agent: Path) -> None:
    thread = _session("discord:300|100")
    # the row's meta as the original writes it (store_state holds it once the session was read from sessions.db)
    thread.store_state = {"meta": {"channelId": "300", "guildId": "100", "parentChannelId": "200", "isNsfw": False}}
    assert _discord_section(agent, thread)[2:5] == [
        "The channel id is: 300",
        "The parent forum/channel id is: 200",
        "This is considered a SFW session",
    ]
    nsfw = _session("discord:400|100")
    nsfw.store_state = {"meta": {"channelId": "400", "guildId": "100", "isNsfw": True}}
    assert _discord_section(agent, nsfw)[2:4] == ["The channel id is: 400", "This is considered a NSFW session"]


def test_a_matrix_session_has_no_prompt_as_in_the_original(agent: Path) -> None:
    with pytest.raises(CireilError, match=r"matrix:!room.*Unimplemented channel: matrix"):
        build_system_prompt(_layout(agent), _session("matrix:!room"))


# -- metadata message ---------------------------------------------------------------------------------


def test_metadata_with_a_known_window() -> None:
    usage = context_usage(1000, 10000, 0.6, 0.85)
    assert metadata_text(usage, BERLIN, NOW) == (
        "Current date: 2026-05-01T12:00:00+02:00 (Friday, CEST) [just now]\n"
        "Context usage: ~1000 / 10000 tokens (10.0% of context window; auto-prune at 8500 tokens / 85.0%; "
        "~7500 tokens remaining before auto-prune)."
    )


def test_metadata_without_a_window() -> None:
    assert usage_line(context_usage(321, None)) == (
        "Context usage: ~321 tokens (context window unavailable; token-budget percentage unavailable; "
        "max-turn pruning applies)."
    )


def test_usage_floors_budgets_and_rounds_percent() -> None:
    usage = context_usage(1234, 9999, 0.6, 0.85)
    assert (usage.soft, usage.hard, usage.remaining) == (5999, 8499, 8499 - 1234)
    assert "(12.3% of context window; auto-prune at 8499 tokens / 85.0%;" in usage_line(usage)


@pytest.mark.parametrize(
    ("estimate", "near"), [(8000, True), (8499, True), (7999, False), (8500, False), (9000, False)]
)
def test_warning_window_is_the_last_five_percent_before_pruning(estimate: int, near: bool) -> None:
    assert context_usage(estimate, 10000, 0.6, 0.85).near_prune is near


def test_prune_warning_text() -> None:
    text = metadata_text(context_usage(8100, 10000), BERLIN, NOW, warn=True)
    assert text.splitlines()[2] == (
        "Context note: the conversation window is approaching its limit (~400 tokens before auto-prune). "
        "When pruning happens, older turns will be dropped to keep roughly ~6000 tokens. "
        "If anything in this conversation needs to survive, write it to a file now."
    )


# -- assembly -----------------------------------------------------------------------------------------


def _assemble(agent: Path, session: Session, model: Model, **kw):
    return assemble(
        layout=_layout(agent), session=session, paths=SandboxPaths(agent), model_cfg=model, tz=BERLIN, now=NOW, **kw
    )


def test_assembled_order_and_estimate(agent: Path) -> None:
    session = _session()
    session.history += [m.user_message("hello there"), m.assistant_message([{"type": "text", "text": "hi"}])]
    session.opened_files.append("/workspace/notes.txt")
    session.opened_files.append("/workspace/gone.txt")
    result = _assemble(agent, session, Model())
    assert result.messages[:2] == session.history
    opened, metadata = result.messages[2], result.messages[3]
    assert opened["role"] == metadata["role"] == "user"
    assert opened["content"][0]["text"] == result.opened_files.text
    assert result.opened_files.text.startswith(
        '<opened_files>\nThese are your currently open files:\n\n<file path="/workspace/notes.txt"'
    )
    assert metadata["content"][0]["text"] == result.metadata
    assert result.notes == ["File /workspace/gone.txt moved/deleted while still open. Automatically closed."]
    assert session.opened_files == ["/workspace/notes.txt"]  # a real model call closes what is gone
    expected = estimate_system(result.system) + estimate_tokens(result.messages[:3])
    assert result.estimate == expected
    assert f"Context usage: ~{expected} tokens (context window unavailable;" in result.metadata


def test_no_open_files_means_no_opened_files_message(agent: Path) -> None:
    session = _session()
    session.history.append(m.user_message("hi"))
    result = _assemble(agent, session, Model())
    assert len(result.messages) == 2 and result.opened_files.text == ""


def test_preview_changes_nothing(agent: Path) -> None:
    session = _session()
    session.history.append(m.user_message("x" * 3000))
    session.opened_files.append("/workspace/gone.txt")
    before = copy.deepcopy(session.state())
    result = _assemble(agent, session, Model(context_window=10), close_missing=False)
    assert result.notes and session.state() == before


def _window_for_warning(agent: Path, session: Session) -> int:
    """A window with the request's estimate 2% below the hard budget: inside the warning zone."""
    estimate = _assemble(agent, session, Model(), close_missing=False).estimate
    return int(estimate / 0.83)


def test_prune_warning_given_once_per_cursor_position(agent: Path) -> None:
    session = _session()
    session.history += [m.user_message("a question " * 50), m.assistant_message([{"type": "text", "text": "ok"}])]
    model = Model(context_window=_window_for_warning(agent, session))
    first = _assemble(agent, session, model)
    assert first.warned and "Context note:" in first.metadata
    assert session.meta[PRUNE_WARNED_KEY] == 0
    second = _assemble(agent, session, model)
    assert not second.warned and "Context note:" not in second.metadata
    session.cursor = 1  # pruning moved on; near the limit again, the agent hears it again
    model = Model(context_window=_window_for_warning(agent, session))
    assert _assemble(agent, session, model).warned
    assert session.meta[PRUNE_WARNED_KEY] == 1


def test_preview_shows_the_warning_without_using_it_up(agent: Path) -> None:
    session = _session()
    session.history.append(m.user_message("a question " * 50))
    model = Model(context_window=_window_for_warning(agent, session))
    assert _assemble(agent, session, model, close_missing=False).warned
    assert PRUNE_WARNED_KEY not in session.meta
    assert _assemble(agent, session, model).warned


def test_pruning_returns_the_cursor_without_storing_it(agent: Path) -> None:
    session = _session()
    for i in range(5):
        session.history += [m.user_message(f"q{i}"), m.assistant_message([{"type": "text", "text": f"a{i}"}])]
    result = _assemble(agent, session, Model(), max_turns=2)
    assert result.cursor == 6 and session.cursor == 0
    assert [msg["content"][0]["text"] for msg in result.history.messages] == ["q3", "a3", "q4", "a4"]


def test_token_cache_may_be_a_plain_dict_kept_by_the_caller(agent: Path) -> None:
    session = _session()
    session.history.append(m.user_message("hi"))
    holder: dict = {}
    _assemble(agent, session, Model(), token_cache=holder)
    assert isinstance(holder["tokens"], TokenCache) and len(holder["tokens"]) > 0


def test_configured_timezone_from_the_runtime_root(agent: Path) -> None:
    root = agent.parent.parent
    (root / "config").mkdir(exist_ok=True)  # init made it, with migrations.json
    (root / "config" / "system.toml").write_text('timezone = "Europe/Berlin"\n')
    session = _session()
    result = assemble(layout=_layout(agent), session=session, paths=SandboxPaths(agent), now=NOW)
    assert result.metadata.startswith("Current date: 2026-05-01T12:00:00+02:00 (Friday, CEST) [just now]\n")
