"""Scenario files and the call checks (issue 21, item 1): parsing, FILE:LINE errors, matchers, ordering."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cireil.runtime.base.errors import ConfigError
from cireil.runtime.evals.matchers import CallSpec, Matcher, check_calls, is_subset
from cireil.runtime.evals.scenario import load_scenarios, read_scenario


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """\
    name = "volunteers"
    messages = ["Who volunteers?", "And on Sunday?"]
    attachments = ["rota.csv"]

    [session]
    name = "garden"
    channel = "cli"
    grant = ["read", "respond"]

    [expect]
    order = "strict"
    forbid = ["exec", { tool = "write", args = { path = { regex = "^/memories" } } }]
    [[expect.call]]
    tool = "read"
    args = { path = { regex = "volunteers" }, limit = { any = true } }
    [[expect.call]]
    tool = "list-dir"
    args.path = "/workspace"
    args.filter = { subset = { kind = "file" } }

    [answer]
    contains = ["Ana", "Ben"]
    regex = "Sun(day)?"
    check = "checks.lists_everyone"
    ended = "respond"

    [limits]
    steps = 6
    tokens = 5000
    seconds = 2.5

    [[reply]]
    calls = [{ tool = "read", args = { path = "/memories/volunteers.md" } }]
    [[reply]]
    text = "I forgot the tools"
"""


def test_a_full_scenario_is_read(tmp_path):
    (tmp_path / "rota.csv").write_text("name\nAna\n")
    scenario, issues = read_scenario(write(tmp_path, "v.toml", GOOD))
    assert issues == []
    assert scenario.name == "volunteers"
    assert scenario.messages == ["Who volunteers?", "And on Sunday?"]
    assert scenario.attachments == [str(tmp_path / "rota.csv")]
    assert scenario.session_id == "cli:garden" and scenario.grant == ["read", "respond"]
    assert scenario.order == "strict"
    assert [c.tool for c in scenario.expected] == ["read", "list-dir"]
    assert dict(scenario.expected[0].args)["path"] == Matcher("regex", "volunteers")
    assert dict(scenario.expected[1].args) == {
        "path": Matcher("exact", "/workspace"),
        "filter": Matcher("subset", {"kind": "file"}),
    }
    assert [c.tool for c in scenario.forbidden] == ["exec", "write"]
    assert scenario.contains == ["Ana", "Ben"] and scenario.regex == ["Sun(day)?"]
    assert (scenario.max_steps, scenario.max_tokens, scenario.seconds) == (6, 5000, 2.5)
    assert scenario.replies[0].calls == (("read", {"path": "/memories/volunteers.md"}),)
    assert scenario.replies[1].text == "I forgot the tools" and scenario.deterministic


def test_every_problem_is_reported_at_once_with_its_line(tmp_path):
    path = write(
        tmp_path,
        "bad.toml",
        """\
        message = "hi"
        atachments = ["x"]

        [session]
        channel = "discord"
        grant = ["read"]

        [expect]
        order = "strictly"
        [[expect.call]]
        tool = "read"
        args = { path = { regex = "(" } }
        [[expect.call]]
        args = { path = "/x" }

        [answer]
        contains = 3
        check = "nodots"
        [limits]
        steps = 0
        secnds = 3
        """,
    )
    scenario, issues = read_scenario(path)
    assert scenario is None
    shown = [str(i) for i in issues]
    f = str(path)
    assert shown == [
        f"{f}:2: unknown key 'atachments' (did you mean 'attachments'?)",
        f"{f}:6: grants apply to remote sessions only; channel 'discord' is not",
        f"{f}:9: 'expect.order' must be one of 'strict', 'any', 'at-least', not \"strictly\" (did you mean 'strict'?)",
        f"{f}:12: 'expect.call[0].args.path.regex' must be a regular expression, not \"(\" "
        "(missing ), unterminated subpattern at position 0)",
        f"{f}:13: 'expect.call[1].tool' is required",
        f"{f}:17: 'answer.contains' must be a string or an array of non-empty strings, not 3",
        f"{f}:18: 'answer.check' must be a dotted name module.function, not \"nodots\"",
        f"{f}:20: 'limits.steps' must be a whole number >= 1, not 0",
        f"{f}:21: unknown key 'secnds' in [limits] (did you mean 'seconds'?)",
    ]


def test_invalid_toml_and_a_scenario_that_checks_nothing(tmp_path):
    broken = write(tmp_path, "broken.toml", 'message = "hi"\n[expect\n')
    nothing = write(tmp_path, "nothing.toml", 'message = "hi"\n')
    with pytest.raises(ConfigError) as err:
        load_scenarios([broken, nothing])
    text = str(err.value)
    assert f"{broken}:2: invalid TOML" in text
    assert f"{nothing}:1: the scenario checks nothing" in text


def test_a_directory_means_its_scenario_files_and_names_must_differ(tmp_path):
    write(tmp_path, "a.toml", 'name = "same"\nmessage = "x"\n[answer]\ncontains = "y"\n')
    write(tmp_path, "b.toml", 'name = "same"\nmessage = "x"\n[answer]\ncontains = "y"\n')
    write(tmp_path, "variants.toml", "[base]\n")  # not a scenario
    with pytest.raises(ConfigError, match="another scenario is also named 'same'"):
        load_scenarios([tmp_path])


def test_matchers():
    assert Matcher("exact", {"a": 1}).matches({"a": 1}) and not Matcher("exact", {"a": 1}).matches({"a": 1, "b": 2})
    assert Matcher("regex", "^/work").matches("/workspace/a") and not Matcher("regex", "x").matches(3)
    assert Matcher("any").matches(None)
    assert is_subset({"a": {"b": [1]}}, {"a": {"b": [2, 1], "c": 3}, "d": 4})
    assert not is_subset({"a": {"b": [5]}}, {"a": {"b": [2, 1]}})
    assert not is_subset({"a": 1}, [1])


def call(name: str, **args) -> dict:
    return {"name": name, "input": args}


READ = CallSpec("read", (("path", Matcher("regex", "notes")),))
LIST = CallSpec("list-dir")


@pytest.mark.parametrize(
    ("calls", "order", "failure"),
    [
        ([call("read", path="/w/notes.md"), call("list-dir"), call("respond")], "strict", None),
        (
            [call("list-dir"), call("read", path="/w/notes.md")],
            "strict",
            "call 1: expected read(path=/notes/): got list-dir",
        ),
        ([call("read", path="/w/notes.md"), call("list-dir"), call("write")], "strict", "order strict: 1 more calls"),
        ([call("list-dir"), call("read", path="/w/notes.md")], "any", None),
        (
            [call("list-dir"), call("read", path="/w/notes.md"), call("exec")],
            "any",
            "order any: unexpected calls (exec)",
        ),
        ([call("exec"), call("list-dir"), call("read", path="/w/notes.md")], "at-least", None),
        ([call("read", path="/w/todo.md"), call("list-dir")], "at-least", "read was called but argument 'path' is"),
        ([call("list-dir")], "at-least", "expected call read(path=/notes/): not called (called: list-dir)"),
    ],
)
def test_ordering(calls, order, failure):
    result = check_calls(calls, [READ, LIST], order, [])
    if failure is None:
        assert result.passed, result.failures
    else:
        assert not result.passed and failure in result.failures[0]


def test_forbidden_calls_match_on_arguments_too():
    forbid = [CallSpec("write", (("path", Matcher("regex", "^/memories")),))]
    assert check_calls([call("write", path="/workspace/a")], [], "at-least", forbid).passed
    failed = check_calls([call("write", path="/memories/x")], [], "at-least", forbid)
    assert failed.failures == ["forbidden call write(path=/^/memories/) was made"]


CHECK = '[answer]\ncontains = "x"\n'


def test_the_session_attributes_conditions_rules_see(tmp_path):
    from cireil.runtime.sessions.conditions import RuleContext

    good = write(
        tmp_path,
        "guild.toml",
        """\
        message = "hi"
        [session.rules]
        guild = "123"
        channel_id = 456
        nsfw = true
        [answer]
        contains = "x"
        """,
    )
    scenario, issues = read_scenario(good)
    assert not issues
    assert scenario.rules_see == RuleContext("discord", guild="123", channel_id="456", nsfw=True)
    assert scenario.session_id == "notebook:eval"  # the turns run in the scenario's own session
    tui_file = write(tmp_path, "tui.toml", f'message = "hi"\n[session.rules]\nchannel = "tui"\n{CHECK}')
    tui, issues = read_scenario(tui_file)
    assert not issues and tui.rules_see == RuleContext("tui")
    bad = write(
        tmp_path,
        "bad.toml",
        """\
        message = "hi"
        [session.rules]
        chanel = "tui"
        guild = "12a"
        [answer]
        contains = "x"
        """,
    )
    scenario, issues = read_scenario(bad)
    f = str(bad)
    assert scenario is None
    assert [str(i) for i in issues] == [
        f"{f}:3: unknown key 'chanel' in [session.rules] (did you mean 'channel'?)",
        f"{f}:4: 'session.rules.guild' must be a Discord id, digits only, not \"12a\"",
    ]
    cases = {
        'channel = "tui"\nguild = "1"': "4: guild, channel_id, parent and nsfw describe Discord: use them with "
        "channel = \"discord\" (not 'tui')",
        'guild = "1"\nparent = "2"\nnsfw = true': "5: nsfw needs a guild and no parent: DMs and threads are never "
        "NSFW in the original",
        'nsfw = "yes"': "3: 'session.rules.nsfw' must be true or false, not \"yes\"",
        'channel = "irc"': "3: 'session.rules.channel' must be one of 'discord', 'tui', 'internal', 'matrix', "
        "'notebook', not \"irc\"",
        "channel_id = 0": "3: 'session.rules.channel_id' must be a Discord id, digits only, not 0",
    }
    for rules, message in cases.items():
        path = write(tmp_path, "case.toml", f'message = "hi"\n[session.rules]\n{rules}\n{CHECK}')
        _, issues = read_scenario(path)
        assert [str(i) for i in issues] == [f"{path}:{message}"]


def test_calls_replies_limits_and_answers_are_checked_by_the_shared_checker_every_problem_at_once(tmp_path):
    path = write(
        tmp_path,
        "more.toml",
        """\
        messages = ["hi", ""]
        [[expect.call]]
        tool = "read"
        args = { path = { any = false } }
        [[expect.call]]
        tool = "read"
        args = { path = { regex = "x", exact = 1 } }
        ok = "yes"
        [expect]
        forbid = "exec"
        [answer]
        ended = "respnd"
        regex = ["a", "["]
        [limits]
        seconds = 0
        tokens = 2.5
        [[reply]]
        reasoning = "thinking"
        [[reply]]
        calls = [3]
        """,
    )
    scenario, issues = read_scenario(path)
    f = str(path)
    assert scenario is None
    assert [str(i) for i in issues] == [
        f"{f}:1: 'messages' must be a string or an array of non-empty strings, not an array",
        f"{f}:4: 'expect.call[0].args.path.any' must be true ({{ any = true }} matches every value)",
        f"{f}:7: 'expect.call[1].args.path' must be a matcher table with exactly one key of exact, regex, subset, "
        "any; to match a table exactly, write { exact = { ... } }",
        f"{f}:8: 'expect.call[1].ok' must be true (the call must succeed) or false (it must fail), not \"yes\"",
        f"{f}:10: 'expect.forbid' must be an array of calls, not \"exec\"",
        f"{f}:12: 'answer.ended' must be one of 'respond', 'no-response', not \"respnd\" (did you mean 'respond'?)",
        f"{f}:13: 'answer.regex' must be a regular expression, not \"[\" (unterminated character set at position 0)",
        f"{f}:15: 'limits.seconds' must be above 0, not 0",
        f"{f}:16: 'limits.tokens' must be a whole number >= 1, not 2.5",
        f"{f}:17: 'reply[0]' needs 'calls' or 'text'",
        f"{f}:20: 'reply[1].calls[0]' must be a tool name or a table {{ tool = \"NAME\", args = {{ ... }} }}, not 3",
    ]
