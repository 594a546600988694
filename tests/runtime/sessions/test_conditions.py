"""conditions.toml (upstream-formats §3.3): the rule language, conditional blocks, and access rules in
every tool that touches a path, exec included. Each rule has a test that fails when it is not enforced."""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config.tomlsource import TomlSource
from cireil.runtime.sessions.conditions import (
    CONDITIONS_FILE,
    Condition,
    RuleContext,
    parse_conditions,
)
from cireil.runtime.sessions.state import Session
from conditionskit import DM, EXAMPLE, GUILD, IN_GUILD, IN_GUILD_NSFW, OTHER_GUILD, TUI, conditions_agent


@pytest.fixture
def agent(tmp_path):
    loaded = cireil.load(conditions_agent(tmp_path))
    yield loaded
    loaded.close()


def denied(result) -> bool:
    data = result.data
    return not data["success"] and "not accessible in the current context" in data["error"]


# -- the rule language -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ctx", "expected"),
    [
        ("tui", TUI, True),
        ("tui", DM, False),
        ("internal", RuleContext("internal"), True),
        ("internal", TUI, False),
        ("discord:nsfw", IN_GUILD_NSFW, True),
        ("discord:nsfw", IN_GUILD, False),
        ("discord:dm", DM, True),
        ("discord:dm", IN_GUILD, False),
        ("discord:dm:77", DM, True),
        ("discord:dm:78", DM, False),
        (f"discord:guild:{GUILD}", IN_GUILD, True),
        (f"discord:guild:{GUILD}", OTHER_GUILD, False),
        ("discord:channel:42", IN_GUILD, True),
        ("discord:channel:42", OTHER_GUILD, False),
        ("discord:forum:5", RuleContext("discord", guild="1", channel_id="9", parent_id="5"), True),
        ("discord:forum:5", IN_GUILD, False),
        ("!discord:nsfw", TUI, True),  # every discord:* is false outside Discord, so its negation holds
        ("!discord:dm", RuleContext(), True),
        ("!tui", TUI, False),
    ],
)
def test_each_condition(text, ctx, expected):
    cond = Condition.parse(text)
    assert cond is not None
    assert cond.holds(ctx) is expected


def _parse(text: str):
    return parse_conditions(TomlSource.parse(CONDITIONS_FILE, text))


def test_every_error_at_once_with_file_and_line():
    text = (
        '[blocks.a]\naction = "allow"\nwhen = "tui"\n'  # 1-3: blocks only load
        '[workspace."/x/"]\naction = "allow"\nwhen = "discord:guild:abc"\n'  # 4-6: ids are digits
        '[memories.y]\naction = "deny"\nwhen = []\nmode = "xor"\ncolour = 1\n'  # 7-11
        "[other]\n"  # 12
    )
    _, issues = _parse(text)
    lines = sorted((i.line, i.message.split(" ")[0]) for i in issues)
    assert [line for line, _ in lines] == [2, 6, 9, 10, 11, 12]
    assert all(i.file == CONDITIONS_FILE and i.severity == "error" for i in issues)
    assert "Supported: [!]discord:nsfw" in next(i.message for i in issues if i.line == 6)


def test_a_broken_file_stops_load_and_a_broken_edit_stops_calls(tmp_path):
    path = conditions_agent(tmp_path)
    (path / "config" / "conditions.toml").write_text('[workspace."/a"]\naction = "maybe"\nwhen = "tui"\n')
    with pytest.raises(ConfigError) as err:
        cireil.load(path)
    assert "config/conditions.toml:2:" in str(err.value)
    (path / "config" / "conditions.toml").write_text(EXAMPLE)
    agent = cireil.load(path)
    try:
        (path / "config" / "conditions.toml").write_text("[workspace\n")
        with pytest.raises(ConfigError, match=r"conditions\.toml:1"):
            agent.call("read", path="/workspace/hello.txt")  # fail closed: no call with unknown rules
    finally:
        agent.close()


# Ids as the original's conditions.toml schema takes them (config/schemas/conditions.ts: `\d+` with the u flag, the
# whole string): its own tests write `discord:guild:guild1`, but only in rules built in code; loading such a file
# fails there too (checked with its valibot schema and smol-toml: "Invalid condition format. Supported: ...").
@pytest.mark.parametrize(
    "when",
    [
        "discord:guild:guild1",
        "!discord:guild:g1",
        "discord:channel:c1",
        "discord:forum:general",
        "discord:dm:x",
        "discord:guild:",
        "discord:guild:\u0661\u0662",  # Arabic-Indic digits: JavaScript's \d is ASCII only
        "discord:guild:12 ",
    ],
)
def test_ids_the_original_refuses_are_refused_with_why(when):
    _, issues = _parse(f'[workspace."/s/"]\naction = "allow"\nwhen = {toml_string(when)}\n')
    (issue,) = issues
    assert issue.line == 3 and issue.severity == "error"
    assert issue.message.startswith(f"Invalid condition format {when!r}. Supported: [!]discord:nsfw")
    assert "is not a Discord id: ids are digits only" in issue.message
    assert "the original CireilClaw refuses this file too" in issue.message


@pytest.mark.parametrize("when", ["tui\n", "discord:guild:1\n", "!!tui", " tui", "discord:dm:1:2", "Tui"])
def test_other_spellings_the_original_refuses(when):
    _, issues = _parse(f'[blocks.a]\naction = "load"\nwhen = {toml_string(when)}\n')
    (issue,) = issues
    assert issue.line == 3 and issue.message.startswith(f"Invalid condition format {when!r}. Supported: ")


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') + '"'


@pytest.mark.parametrize("when", ["discord:guild:0", "discord:guild:0123", "!discord:dm:77", "discord:forum:5"])
def test_any_ascii_digits_are_accepted(when):
    conditions, issues = _parse(f'[blocks.a]\naction = "load"\nwhen = "{when}"\n')
    assert issues == [] and [r.when_text for r in conditions.blocks] == [when]


def test_ids_match_a_discord_session_s_meta_as_the_original_reads_it():
    # the original restores a Discord session from meta alone (db/sessions.ts DiscordMetaSchema), not from its id
    thread = Session(
        "discord:999|888",
        platform="discord",
        meta={"channelId": "300", "guildId": "100", "parentChannelId": "200", "isNsfw": False},
    )
    dm = Session("discord:400", platform="discord", meta={"channelId": "400"})
    conditions, issues = _parse(
        '[blocks.guild]\naction = "load"\nwhen = "discord:guild:100"\n'
        '[blocks.thread]\naction = "load"\nwhen = "discord:channel:300"\n'
        '[blocks.forum]\naction = "load"\nwhen = "discord:forum:200"\n'
        '[blocks.parent]\naction = "load"\nwhen = "discord:channel:200"\n'
        '[blocks.dm]\naction = "load"\nwhen = "discord:dm:400"\n'
        '[blocks.anydm]\naction = "load"\nwhen = "discord:dm"\n'
        '[blocks.notguild]\naction = "load"\nwhen = "!discord:guild:100"\n'
    )
    assert issues == []
    loads = {
        name: [r.key for r in conditions.blocks_for(RuleContext.of_session(s))]
        for name, s in (("thread", thread), ("dm", dm))
    }
    assert loads == {"thread": ["guild", "thread", "forum"], "dm": ["dm", "anydm", "notguild"]}


# -- path decisions ------------------------------------------------------------------------------------
def test_decisions_of_the_example():
    conditions, issues = _parse(EXAMPLE)
    assert issues == []
    decide = conditions.decide
    assert decide("/workspace/shared/plan.md", IN_GUILD).allowed
    assert not decide("/workspace/shared/plan.md", OTHER_GUILD).allowed  # matched, none applied: deny
    assert not decide("/workspace/shared", TUI).allowed  # the directory itself
    assert not decide("/workspace/shared/nsfw/x.md", IN_GUILD).allowed  # deny wins
    assert decide("/workspace/shared/nsfw/x.md", IN_GUILD_NSFW).allowed
    assert decide("/workspace/other.md", RuleContext()).allowed  # no key matches: allow
    assert decide("/memories/private/diary.md", TUI).allowed
    assert decide("/memories/private/diary.md", DM).allowed
    assert not decide("/memories/private/diary.md", IN_GUILD).allowed
    assert decide("/blocks/soul.md", RuleContext()).allowed  # only /memories and /workspace have rules


def test_exact_keys_and_keys_without_a_leading_slash():
    conditions, issues = _parse('[workspace."notes.md"]\naction = "allow"\nwhen = "tui"\n')
    assert issues == []
    assert not conditions.decide("/workspace/notes.md", RuleContext()).allowed
    assert conditions.decide("/workspace/notes.md", TUI).allowed
    assert conditions.decide("/workspace/notes.md.bak", RuleContext()).allowed  # exact, not a prefix


def test_paths_are_normalized_before_matching(agent):
    agent.act_as(OTHER_GUILD)
    for sneaky in ("/workspace//shared/plan.md", "/workspace/./shared/plan.md", "/workspace/x/../shared/plan.md"):
        assert denied(agent.call("read", path=sneaky)), sneaky


def test_a_symlink_into_a_denied_area_is_denied(agent):
    (agent.directory / "workspace" / "alias").symlink_to("shared")
    agent.act_as(OTHER_GUILD)
    assert denied(agent.call("read", path="/workspace/alias/plan.md"))
    agent.act_as(IN_GUILD)
    assert agent.call("read", path="/workspace/alias/plan.md").data["success"]


# -- every file tool -----------------------------------------------------------------------------------
def test_read_is_denied_outside_the_guild_and_allowed_inside(agent):
    assert denied(agent.call("read", path="/workspace/shared/plan.md"))  # a notebook session: no rule holds
    agent.act_as(IN_GUILD)
    ok = agent.call("read", path="/workspace/shared/plan.md").data
    assert ok["success"] and "shared secret plan" in str(ok)


def test_the_denial_names_the_context(agent):
    agent.act_as(OTHER_GUILD)
    error = agent.call("read", path="/workspace/shared/plan.md").data["error"]
    assert error == (
        "Access denied: path '/workspace/shared/plan.md' is not accessible in the current context "
        "(channel: discord, guild: 999, nsfw: true)."
    )


def test_write_and_edit_are_denied(agent):
    agent.act_as(OTHER_GUILD)
    assert denied(agent.call("write", path="/workspace/shared/new.md", content="x"))
    assert not (agent.directory / "workspace" / "shared" / "new.md").exists()
    edits = [{"oldText": "shared secret plan", "newText": "changed"}]
    assert denied(agent.call("edit", path="/workspace/shared/plan.md", edits=edits))
    assert "shared secret plan" in (agent.directory / "workspace" / "shared" / "plan.md").read_text()
    agent.act_as(IN_GUILD)
    assert agent.call("edit", path="/workspace/shared/plan.md", edits=edits).data["success"]


def test_deny_inside_an_allowed_area(agent):
    agent.act_as(IN_GUILD)
    assert denied(agent.call("read", path="/workspace/shared/nsfw/x.md"))
    assert denied(agent.call("write", path="/workspace/shared/nsfw/y.md", content="x"))
    agent.act_as(IN_GUILD_NSFW)
    assert agent.call("read", path="/workspace/shared/nsfw/x.md").data["success"]


def test_list_dir_denies_the_area_and_hides_its_entry(agent):
    assert denied(agent.call("list-dir", path="/workspace/shared"))
    names = [e["name"] for e in agent.call("list-dir", path="/workspace").data["entries"]]
    assert "shared" not in names and "hello.txt" in names
    agent.act_as(IN_GUILD)
    listed = agent.call("list-dir", path="/workspace/shared").data["entries"]
    assert [e["name"] for e in listed] == ["nsfw", "plan.md"] or {"plan.md"} <= {e["name"] for e in listed}
    assert "nsfw" not in [e["name"] for e in listed]  # denied below: not shown either


def test_open_file_and_read_sections_are_denied(agent):
    assert denied(agent.call("open-file", path="/memories/private/diary.md"))
    assert denied(agent.call("read-sections", path="/memories/private/diary.md", sections=["diary"]))
    agent.act_as(TUI)
    assert agent.call("open-file", path="/memories/private/diary.md").data["success"]


def test_an_opened_file_stops_showing_where_it_is_denied(agent):
    agent.act_as(TUI)
    assert agent.call("open-file", path="/memories/private/diary.md").data["success"]
    assert "dear diary" in agent.context().text
    agent.act_as(IN_GUILD)
    context = agent.context()
    assert "dear diary" not in context.text
    assert context.notes == [
        "File /memories/private/diary.md is not accessible in the current context. Automatically closed."
    ]


def test_respond_attachments_are_checked(agent):
    result = agent.call("respond", content="here", attachments=["/memories/private/diary.md"]).data
    assert not result["success"] and "not accessible in the current context" in result["error"]


def test_sessions_carry_their_own_context(agent):
    guild_session = Session(f"discord:42|{GUILD}", platform="discord", meta={"channelId": "42", "guildId": GUILD})
    ctx = agent.tool_context(guild_session, None)
    assert ctx.paths.visible("/workspace/shared/plan.md")
    tui = agent.tool_context(Session("tui", platform="tui"), None)
    assert not tui.paths.visible("/workspace/shared/plan.md")
    assert tui.paths.visible("/memories/private/diary.md")


def test_rules_are_reread_when_the_file_changes(agent):
    assert agent.call("read", path="/workspace/hello.txt").data["success"]
    (agent.directory / "config" / "conditions.toml").write_text(
        EXAMPLE + '\n[workspace."/hello.txt"]\naction = "deny"\nwhen = "!tui"\n'
    )
    assert not agent.call("read", path="/workspace/hello.txt").data["success"]


# -- exec ----------------------------------------------------------------------------------------------
def sh(agent, script: str) -> dict:
    return agent.call("exec", command="sh", args=["-c", script]).data


def test_exec_hides_denied_areas(agent):
    out = sh(agent, "cat /workspace/shared/plan.md; ls /workspace/shared; cat /memories/private/diary.md; echo END")
    assert "shared secret plan" not in out["stdout"] and "dear diary" not in out["stdout"]
    assert "plan.md" not in out["stdout"] and "END" in out["stdout"]
    assert "hello" in sh(agent, "cat /workspace/hello.txt")["stdout"]  # the rest stays as it was


def test_exec_exposes_what_the_context_allows(agent):
    agent.act_as(IN_GUILD)
    out = sh(agent, "cat /workspace/shared/plan.md; cat /workspace/shared/nsfw/x.md")
    assert "shared secret plan" in out["stdout"] and "nsfw text" not in out["stdout"]
    agent.act_as(IN_GUILD_NSFW)
    assert "nsfw text" in sh(agent, "cat /workspace/shared/nsfw/x.md")["stdout"]


def test_exec_rebinds_an_allowed_area_below_a_hidden_one(tmp_path):
    text = (
        # the parent only in the TUI; the child also everywhere else ("rules matched, none applied" denies)
        '[workspace."/shared/"]\naction = "allow"\nwhen = "tui"\n'
        '[workspace."/shared/public/"]\naction = "allow"\nwhen = "!tui"\n'
    )
    path = conditions_agent(tmp_path, text)
    (path / "workspace" / "shared" / "public").mkdir()
    (path / "workspace" / "shared" / "public" / "p.txt").write_text("public text\n")
    agent = cireil.load(path)
    try:
        assert agent.call("read", path="/workspace/shared/public/p.txt").data["success"]
        out = sh(agent, "cat /workspace/shared/public/p.txt; cat /workspace/shared/plan.md")
        assert "public text" in out["stdout"] and "shared secret plan" not in out["stdout"]
        sh(agent, "echo written > /workspace/shared/public/w.txt")
        assert (path / "workspace" / "shared" / "public" / "w.txt").read_text() == "written\n"
    finally:
        agent.close()


def test_exec_without_a_sandbox_refuses_when_something_is_denied(tmp_path):
    path = conditions_agent(tmp_path)
    (path / "config" / "sandbox.toml").write_text('backend = "none"\n[bwrap]\nbinaries = ["cat"]\n')
    agent = cireil.load(path)
    try:
        result = agent.call("exec", command="cat", args=["/workspace/hello.txt"]).data
        assert not result["success"] and "conditions.toml denies paths" in result["error"]
    finally:
        agent.close()


# -- conditional blocks --------------------------------------------------------------------------------
def test_conditional_block_in_the_prompt_only_where_its_rule_holds(agent):
    plain = agent.prompt().assembled.system
    assert "<conditional/after-hours>" not in plain
    agent.act_as(TUI)
    prepared = agent.prompt()
    assert (
        "<conditional/after-hours>\n<description>\nLate at night\n</description>\n<metadata>\n"
        "- chars_current: 14\n- file_path: /blocks/conditional/after-hours.md\n- conditional: true\n"
        "</metadata>\n<content>\nSpeak softly.\n</content>\n</conditional/after-hours>\n"
    ) in prepared.assembled.system
    assert [r.key for r in prepared.assembled.prompt.rules] == ["after-hours"]


def test_a_conditional_block_without_frontmatter_fails_the_turn_and_warns_at_load(tmp_path):
    path = conditions_agent(tmp_path)
    (path / "blocks" / "conditional" / "after-hours.md").write_text("no frontmatter\n")
    agent = cireil.load(path)
    try:
        assert any("blocks/conditional/after-hours.md:1" in str(w) for w in agent.warnings)
        agent.act_as(TUI)
        with pytest.raises(ConfigError, match=r"after-hours\.md:1: invalid frontmatter"):
            agent.prompt()
    finally:
        agent.close()


def test_a_missing_block_file_is_skipped_with_a_load_warning(tmp_path):
    path = conditions_agent(tmp_path)
    (path / "blocks" / "conditional" / "after-hours.md").unlink()
    agent = cireil.load(path)
    try:
        assert any(str(w).startswith("config/conditions.toml:1: warning: block 'after-hours'") for w in agent.warnings)
        agent.act_as(TUI)
        assert "conditional/" not in agent.prompt().assembled.system
    finally:
        agent.close()


# -- the notebook ------------------------------------------------------------------------------------
def test_session_options_choose_what_the_rules_see(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from cireil.kernel import extension
    from magicshell import loaded, run, usage_error

    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    try:
        loaded(shell, conditions_agent(tmp_path))
        _card, rules = run(shell, f"%cireil session --channel discord --guild {GUILD} --channel-id 42").displayed
        text = rules["text/plain"]
        assert f"rules see: channel: discord, guild: {GUILD}, nsfw: false (set with %cireil session)" in text
        assert "/workspace/shared: allowed" in text and "/workspace/shared/nsfw: DENIED" in text
        assert "does not add /blocks/conditional/after-hours.md" in text
        assert "<script" not in rules["text/html"] and "/workspace/shared/nsfw: DENIED" in rules["text/html"]
        agent = extension._LOADED[id(shell)][0].agent
        assert agent.call("read", path="/workspace/shared/plan.md").data["success"]
        run(shell, "%cireil session --channel tui")
        assert not agent.call("read", path="/workspace/shared/plan.md").data["success"]
        shown = run(shell, "%cireil prompt").displayed
        assert any("adds /blocks/conditional/after-hours.md" in b["text/plain"] for b in shown)
        assert any("&lt;conditional/after-hours&gt;" in b["text/html"] for b in shown)
        shown = run(shell, "%cireil context").displayed
        assert any("rules see: channel: tui" in b["text/plain"] for b in shown)
        run(shell, "%cireil session --as-is")
        assert "rules see: channel: notebook" in run(shell, "%cireil context").displayed[-1]["text/plain"]
        assert "digits only" in usage_error(shell, "%cireil session --guild abc")
        assert "use them with --channel discord" in usage_error(shell, "%cireil session --channel tui --nsfw")
        assert "--channel must be one of" in usage_error(shell, "%cireil session --channel irc")
        assert "DMs and threads are never NSFW" in usage_error(shell, "%cireil session --channel discord --nsfw")
    finally:
        if "cireil" in shell.extension_manager.loaded:
            shell.extension_manager.unload_extension("cireil")
        InteractiveShell.clear_instance()


# -- an agent root written from the original's own example files (upstream-formats §3.2–3.7) -------------
ORIGINAL_FILES = {
    "config/cron.toml": """\
[[jobs]]
id = "morning-brief"
prompt = "Read /tasks/morning.md and send me today's plan."
schedule = { cron = "30 7 * * 1-5" }
target = "discord:1425768080998400016"

[[jobs]]
id = "hourly-sync"
prompt = "Check /workspace/inbox for new files."
schedule = { every = 3600 }
delivery = "none"
""",
    "config/heartbeat.toml": """\
enabled = true
interval = 3600

[activeHours]
start = "08:00"
end = "22:00"
timezone = "Europe/Berlin"
""",
    "config/summarization.toml": 'provider = "default"\nmodel = "gpt-4o-mini"\n',
    "config/channels/discord.toml": """\
token = "MTQy.x.y"
ownerId = "402981735266648064"

[directMessages]
mode = "allowlist"
users = ["555000111222333444"]
""",
    "config/conditions.toml": EXAMPLE,
}
ORIGINAL_PLUGINS = """\
[[plugins]]
package = "@cireilclaw/plugin-brave-search"

[[plugins]]
name = "weather-local"
stateQuotaBytes = 1048576
"""


def original_root(tmp_path: Path) -> Path:
    from cireil.runtime.scaffold import init

    agent = init(tmp_path / "root" / "agents" / "wren")
    root = agent.parents[1]
    for rel, text in ORIGINAL_FILES.items():
        (agent / rel).parent.mkdir(parents=True, exist_ok=True)
        (agent / rel).write_text(text)
    engine = agent / "config" / "engine.toml"
    engine.write_text(
        engine.read_text()
        + '\n[claude]\nkind = "anthropic"\napiBase = "https://api.anthropic.com/v1"\ndefaultModel = "claude-x"\n'
        + 'availableModels = "analyze"\n'
        + '\n[codex]\nkind = "openai-codex"\napiBase = "https://chatgpt.com/backend-api"\ndefaultModel = "gpt-5"\n'
    )
    (root / "config" / "plugins.toml").write_text(ORIGINAL_PLUGINS)
    (root / "config" / "plugins").mkdir()
    (root / "config" / "plugins" / "brave-search.toml").write_text('apiKey = "x"\n')
    (root / "plugins" / "weather-local").mkdir(parents=True)
    (root / "plugins" / "weather-local" / "package.json").write_text('{"name": "weather-local"}')
    return agent


def test_an_agent_from_the_originals_example_files_loads_with_a_warning_for_each_unhonoured_part(tmp_path):
    agent_dir = original_root(tmp_path)
    report = cireil.dry_run(agent_dir)
    assert report.ok, report.errors
    agent = cireil.load(agent_dir)
    try:
        shown = [str(w) for w in agent.warnings]
    finally:
        agent.close()
    expected_starts = [
        # conditions are honoured; the one note is the example's block file, which the example does not include
        "config/conditions.toml:1: warning: block 'after-hours': blocks/conditional/after-hours.md does not exist",
        "config/cron.toml:5: warning: cron job 'morning-brief' runs in cireil, but its target discord:14257680",
        "config/cron.toml: warning: these jobs run in cireil while the kernel lives, except while `cireilclaw run`",
        "config/heartbeat.toml:1: warning: pulses are skipped until tasks/HEARTBEAT.md has content",
        "config/heartbeat.toml:1: warning: the heartbeat pulses in cireil while the kernel lives",
        "config/summarization.toml: warning: has no effect",
        "config/channels/discord.toml: warning: has no effect here: cireil has no Discord channel",
        "../../config/openai-codex/default.json: warning: does not exist: the original CireilClaw creates it with "
        "`cireilclaw codex --authId default`",
        "../../config/plugins.toml:1: warning: plugin package '@cireilclaw/plugin-brave-search' did not load: plugin "
        "package @cireilclaw/plugin-brave-search is not installed in ",
        "../../config/plugins.toml:4: warning: plugin 'weather-local' did not load: plugin 'weather-local' is missing "
        "its dependencies",
    ]
    for start in expected_starts:
        assert sum(s.startswith(start) for s in shown) == 1, (start, shown)
    assert len(shown) == len(expected_starts), shown
    # and the rules of its conditions.toml hold: the shared folder is closed in a notebook session
    loaded = cireil.load(agent_dir)
    try:
        (agent_dir / "workspace" / "shared").mkdir()
        (agent_dir / "workspace" / "shared" / "x.md").write_text("x\n")
        assert not loaded.call("read", path="/workspace/shared/x.md").data["success"]
    finally:
        loaded.close()


def test_a_cron_file_the_original_refuses_is_named(tmp_path):
    agent_dir = original_root(tmp_path)
    (agent_dir / "config" / "cron.toml").write_text(
        '[[jobs]]\nid = "x"\nprompt = "p"\nschedule = { every = 5 }\ncolour = "red"\n'
    )
    shown = [str(w) for w in cireil.dry_run(agent_dir).warnings]
    assert (
        "config/cron.toml:4: warning: the original CireilClaw refuses this file: 'jobs[0].schedule.every' must be"
        in "\n".join(shown)
    )
    assert any(
        s.startswith("config/cron.toml:5: warning: the original CireilClaw refuses this file: unknown key")
        for s in shown
    )


def test_exec_hides_a_denied_file_and_a_denied_root(tmp_path):
    text = '[workspace."/hello.txt"]\naction = "allow"\nwhen = "tui"\n[memories."/"]\naction = "deny"\nwhen = "!tui"\n'
    agent = cireil.load(conditions_agent(tmp_path, text))
    try:
        assert denied(agent.call("read", path="/workspace/hello.txt"))
        assert denied(agent.call("list-dir", path="/memories"))
        out = sh(agent, "cat /workspace/hello.txt; echo [; ls /memories; echo ]; cat /workspace/docs/guide.md")
        assert out["stdout"].startswith("[\n]\n") and "# Guide" in out["stdout"]  # empty file, empty folder
        agent.act_as(TUI)
        out = sh(agent, "cat /workspace/hello.txt; ls /memories")
        # a path only deny rules match is denied everywhere (the original's "matched, none applied")
        assert out["stdout"] == "hello\n" and denied(agent.call("list-dir", path="/memories"))
    finally:
        agent.close()


def test_exec_cannot_rename_a_hidden_area_out_from_under_its_rule(agent):
    """`/shared/` is allowed in the guild, `/shared/nsfw/` is not: renaming `shared` (or anything between it
    and the hidden area) would show nsfw under a name no rule denies."""
    agent.act_as(IN_GUILD)
    out = sh(agent, "mv /workspace/shared /workspace/s2; echo mv=$?; ls /workspace; cat /workspace/s2/nsfw/x.md")
    assert "mv=0" not in out["stdout"] and "nsfw text" not in out["stdout"], out
    assert "shared secret plan" in sh(agent, "cat /workspace/shared/plan.md")["stdout"]  # still usable as before
    sh(agent, "echo more > /workspace/shared/more.txt")
    assert (agent.directory / "workspace" / "shared" / "more.txt").read_text() == "more\n"
    read = agent.call("read", path="/workspace/s2/nsfw/x.md").data
    assert read["success"] is False and "nsfw text" not in repr(read)


def test_pinning_never_covers_a_sandbox_toml_mount(tmp_path):
    text = '[workspace."/data/secret/"]\naction = "deny"\nwhen = "!tui"\n'
    path = conditions_agent(tmp_path, text)
    source = tmp_path / "rw-src"
    source.mkdir()
    sandbox_toml = path / "config" / "sandbox.toml"
    sandbox_toml.write_text(
        sandbox_toml.read_text() + f'[[mounts]]\nsource = "{source}"\ntarget = "data/rw"\nmode = "rw"\n'
    )
    (path / "workspace" / "data" / "secret").mkdir(parents=True)
    (path / "workspace" / "data" / "secret" / "s.txt").write_text("data secret\n")
    (path / "workspace" / "data" / "deep" / "er").mkdir(parents=True)
    agent = cireil.load(path)
    try:
        out = sh(agent, "echo via-mount > /workspace/data/rw/m.txt; cat /workspace/data/secret/s.txt; echo END")
        assert "data secret" not in out["stdout"] and "END" in out["stdout"], out
        assert (source / "m.txt").read_text() == "via-mount\n"
    finally:
        agent.close()


def test_a_stored_discord_rows_meta_is_what_the_rules_see(tmp_path):
    # isNsfw and parentChannelId live only in the row the original wrote: nsfw and forum rules read them there
    import sqlite3

    from cireil.runtime.sessions import SessionStore
    from cireil.runtime.sessions.conditions import RuleContext

    store = SessionStore.for_agent(tmp_path)
    try:
        raw = sqlite3.connect(store.path, isolation_level=None)
        raw.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES ('discord:7|9', 'discord',"
            ' \'{"channelId":"7","guildId":"9","isNsfw":true}\', \'[]\', \'[]\'),'
            ' (\'discord:8|9\', \'discord\', \'{"channelId":"8","guildId":"9","parentChannelId":"5"}\','
            " '[]', '[]')"
        )
        raw.close()
        nsfw = RuleContext.of_session(store.get("discord:7|9"))
        assert (nsfw.guild, nsfw.channel_id, nsfw.nsfw) == ("9", "7", True)
        thread = RuleContext.of_session(store.get("discord:8|9"))
        assert (thread.parent_id, thread.nsfw) == ("5", False)
    finally:
        store.close()
