"""Scenario files: what to say to the agent, which tool calls to expect, how to judge the answer.

    message = "Who volunteers on Saturdays?"      # or messages = [...]: one turn each
    attachments = ["data/rota.csv"]               # with the first message; relative to this file

    [session]
    name = "eval"                                 # the session is CHANNEL:NAME
    channel = "notebook"
    grant = ["read", "respond"]                   # optional: the only tools the session may use
    [session.rules]                               # optional: what conditions.toml rules see of the session,
    channel = "discord"                           # as `%cireil session --channel discord --guild 123` sets it
    guild = "123"                                 # also: channel_id, parent (a thread's channel), nsfw = true

    [expect]
    order = "at-least"                            # strict | any | at-least
    forbid = ["exec"]                             # names, or tables {tool, args}
    [[expect.call]]
    tool = "read"
    args = { path = { regex = "volunteers" } }    # exact value, {regex}, {subset}, {any = true}, {exact}
    ok = true                                     # and it must succeed (optional)

    [answer]
    contains = ["Ana"]
    regex = "Saturday"
    check = "mychecks.lists_everyone"             # a Python function by dotted name

    [limits]
    steps = 6
    tokens = 50000
    seconds = 60

    [[reply]]                                     # pinned replies: the model is a script (deterministic)
    calls = [{ tool = "read", args = { path = "/memories/volunteers.md" } }]

Every problem is reported at once, as FILE:LINE: message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import params
from ..base.didyoumean import suggestion
from ..base.errors import ConfigError, ConfigIssue
from ..config.checker import Checker, label, toml_repr
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_config_bytes
from ..sessions.conditions import CHANNELS, RuleContext
from ..sessions.state import platform_of
from .matchers import MATCHER_KINDS, ORDERS, CallSpec, Matcher, compile_regex

DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@dataclass(frozen=True)
class PinnedReply:
    calls: tuple[tuple[str, dict], ...] = ()
    text: str | None = None
    reasoning: str | None = None


@dataclass
class Scenario:
    name: str
    path: str  # as given: where errors and reports point
    messages: list[str]
    attachments: list[str] = field(default_factory=list)  # absolute paths
    session_name: str = "eval"
    channel: str = "notebook"
    grant: list[str] | None = None
    rules_see: RuleContext | None = None  # what conditions.toml rules are told about the session, when set
    order: str = "at-least"
    expected: list[CallSpec] = field(default_factory=list)
    forbidden: list[CallSpec] = field(default_factory=list)
    contains: list[str] = field(default_factory=list)
    regex: list[str] = field(default_factory=list)
    check: str | None = None
    ended: str | None = None
    max_steps: int | None = None
    max_tokens: int | None = None
    seconds: float | None = None
    replies: list[PinnedReply] = field(default_factory=list)
    description: str = ""

    @property
    def session_id(self) -> str:
        return f"{self.channel}:{self.session_name}"

    @property
    def deterministic(self) -> bool:
        return bool(self.replies)


def _regex_problem(value: str | list[str]) -> str | None:
    # compiled by the engine the checks run on (RE2, linear time): what it cannot run is refused here, not mid-eval
    for pattern in [value] if isinstance(value, str) else value:
        try:
            re.compile(pattern)  # compiling only (never matching): Python's reasons read best for a typo
        except re.error as exc:
            return f"must be a regular expression, not {toml_repr(pattern)} ({exc})"
        try:
            compile_regex(pattern)
        except ValueError as exc:
            return f"must be a regular expression RE2 can run (linear time), not {toml_repr(pattern)} ({exc})"
    return None


def _dotted_problem(value: str) -> str | None:
    return None if DOTTED.match(value) else f"must be a dotted name module.function, not {toml_repr(value)}"


def _ending_problem(value: str) -> str | None:
    from ..toolkit.registry import turn_enders  # the tools that declare they end the turn, imported only when asked

    endings = turn_enders()
    if value in endings:
        return None
    return f"must be one of {', '.join(repr(e) for e in endings)}, not {toml_repr(value)}{suggestion(value, endings)}"


def _positive(value: float) -> str | None:
    return None if value > 0 else f"must be above 0, not {toml_repr(value)}"


def _text(**kwargs: Any) -> params.String:
    return params.String(pattern=r"\S", description=kwargs.pop("description", "a non-empty string"), **kwargs)


def _texts(**kwargs: Any) -> params.AnyOf:
    """One string or several: `contains = "Ana"` or `contains = ["Ana", "Ben"]`."""
    return params.AnyOf(
        options=(params.String(min_length=1), params.Array(items=params.String(min_length=1))),
        description="a string or an array of non-empty strings",
        required=False,
        **kwargs,
    )


def _listed(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


_TABLE = params.RawObject(required=False)  # a section, checked by its own fields below
_CALLS = params.Array(required=False, description="an array of calls")
_DISCORD_ID = params.AnyOf(
    options=(params.String(pattern=r"^[0-9]+$"), params.Integer(minimum=1)),
    description="a Discord id, digits only",
    required=False,
)
TOP = {
    "name": _text(required=False),
    "description": _text(required=False),
    "message": _text(required=False, description="a non-empty string (for several turns, use 'messages')"),
    "messages": _texts(),
    "attachments": _texts(),
    "session": _TABLE,
    "expect": _TABLE,
    "answer": _TABLE,
    "limits": _TABLE,
    "reply": params.Array(required=False, description="an array of tables: [[reply]]"),
}
SESSION = {"name": _text(default="eval"), "channel": _text(default="notebook"), "grant": _texts(), "rules": _TABLE}
RULES = {
    "channel": params.String(enum=CHANNELS, required=False),
    "guild": _DISCORD_ID,
    "channel_id": _DISCORD_ID,
    "parent": _DISCORD_ID,
    "nsfw": params.Boolean(required=False),
}
_DISCORD_IDS = ("guild", "channel_id", "parent")
EXPECT = {"order": params.String(enum=ORDERS, default="at-least"), "call": _CALLS, "forbid": _CALLS}
CALL = {
    "tool": _text(description="a tool name"),
    "args": params.RawObject(default={}, description="a table of argument name = matcher"),
    "ok": params.Boolean(required=False, description="true (the call must succeed) or false (it must fail)"),
}
ANSWER = {
    "contains": _texts(),
    "regex": _texts(check=_regex_problem),
    "check": params.String(required=False, description="a dotted name module.function", check=_dotted_problem),
    "ended": params.String(required=False, description="the name of a tool that ends the turn", check=_ending_problem),
}
LIMITS = {
    "steps": params.Integer(minimum=1, required=False),
    "tokens": params.Integer(minimum=1, required=False),
    "seconds": params.Number(required=False, description="a number of seconds", check=_positive),
}
REPLY = {"calls": _CALLS, "text": _text(required=False), "reasoning": _text(required=False)}
_REGEX = params.String(description="a regular expression", check=_regex_problem)


def _rules_see(check: Checker, raw: Any) -> RuleContext | None:
    """[session.rules]: what conditions.toml rules are told about the session, checked as `%cireil session`
    checks its options (the turns run in the scenario's own session; only the rules see another channel)."""
    path = ("session", "rules")
    mark = check.mark()
    rules = check.table(path, raw, RULES)
    if not rules or check.errors_since(mark):
        return None
    ids = {key: str(rules[key]) for key in _DISCORD_IDS if key in rules}
    nsfw = rules.get("nsfw", False)
    discordish = [k for k in (*_DISCORD_IDS, "nsfw") if k in rules]
    channel = rules.get("channel") or ("discord" if discordish else None)
    if channel is None:
        return None
    if channel != "discord" and discordish:
        check.fail(
            (*path, discordish[0]),
            "guild, channel_id, parent and nsfw describe Discord: use them with "
            f"channel = \"discord\" (not '{channel}')",
        )
        return None
    if nsfw and ("guild" not in ids or "parent" in ids):
        check.fail((*path, "nsfw"), "nsfw needs a guild and no parent: DMs and threads are never NSFW in the original")
        return None
    return RuleContext(
        channel, guild=ids.get("guild"), channel_id=ids.get("channel_id"), parent_id=ids.get("parent"), nsfw=nsfw
    )


def _matcher(check: Checker, value: Any, path: tuple) -> Matcher | None:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in MATCHER_KINDS:
        kind, inner = next(iter(value.items()))
        where = (*path, kind)
        if kind == "any":
            if inner is not True:
                check.fail(where, f"'{label(*where)}' must be true ({{ any = true }} matches every value)")
                return None
            return Matcher("any")
        if kind == "regex" and not check.value(where, inner, _REGEX)[0]:
            return None
        return Matcher(kind, inner)
    if isinstance(value, dict) and any(k in MATCHER_KINDS for k in value):
        check.fail(
            path,
            f"'{label(*path)}' must be a matcher table with exactly one key of {', '.join(MATCHER_KINDS)}; "
            "to match a table exactly, write { exact = { ... } }",
        )
        return None
    return Matcher("exact", value)


def _call(check: Checker, value: Any, path: tuple) -> CallSpec | None:
    line = check.source.line_of(*path)
    if isinstance(value, str) and value:
        return CallSpec(value, (), line)
    if not isinstance(value, dict):
        shown = f"'{label(*path)}' must be a tool name or a table {{ tool = \"NAME\", args = {{ ... }} }}"
        check.fail(path, f"{shown}, not {toml_repr(value)}")
        return None
    mark = check.mark()
    fields = check.table(path, value, CALL) or {}
    matchers = []
    for key, raw in fields.get("args", {}).items():
        found = _matcher(check, raw, (*path, "args", key))
        if found is not None:
            matchers.append((key, found))
    if check.errors_since(mark):
        return None
    return CallSpec(fields["tool"], tuple(matchers), line, fields.get("ok"))


def _calls(check: Checker, value: list | None, path: tuple) -> list[CallSpec]:
    found = [_call(check, item, (*path, n)) for n, item in enumerate(value or ())]
    return [c for c in found if c is not None]


def _reply(check: Checker, value: Any, path: tuple) -> PinnedReply | None:
    mark = check.mark()
    table = check.table(path, value, REPLY)
    if table is None:
        return None
    calls = []
    for n, raw in enumerate(table.get("calls") or ()):
        spec = _call(check, raw, (*path, "calls", n))
        if spec is not None:
            calls.append((spec.tool, _plain_args(raw)))
    if not calls and "text" not in table and not check.errors_since(mark):
        check.fail(path, f"'{label(*path)}' needs 'calls' or 'text'")
    return PinnedReply(tuple(calls), table.get("text"), table.get("reasoning"))


def _plain_args(call: Any) -> dict:
    return dict(call.get("args") or {}) if isinstance(call, dict) else {}


def parse_scenario(source: TomlSource, base: Path, default_name: str) -> tuple[Scenario | None, list[ConfigIssue]]:
    check = Checker(source)
    data = source.data
    top = check.table((), data, TOP) or {}
    messages = _listed(top.get("messages"))
    if "message" in data:
        if messages:
            check.fail(("message",), "write either 'message' or 'messages', not both")
        messages = [top["message"]] if "message" in top else []
    elif "messages" not in data:
        check.issues.append(
            ConfigIssue(source.rel, 1, "a scenario needs 'message' (or 'messages'), what the person says")
        )
    attachments = []
    for raw in _listed(top.get("attachments")):
        path = (base / raw).resolve()
        if not path.is_file():
            check.fail(("attachments",), f"'attachments' must name files next to the scenario, not {toml_repr(raw)}")
        attachments.append(str(path))
    scenario = Scenario(name=top.get("name") or default_name, path=source.rel, messages=messages)
    scenario.attachments = attachments
    scenario.description = top.get("description", "")

    session = check.table(("session",), top.get("session", {}), SESSION) or {}
    scenario.session_name = session.get("name", "eval")
    scenario.channel = session.get("channel", "notebook")
    if ":" in scenario.channel or ":" in scenario.session_name:
        check.fail(("session",), "session 'name' and 'channel' cannot contain ':' (the session id is CHANNEL:NAME)")
    if "grant" in session:
        scenario.grant = _listed(session["grant"])
        if platform_of(scenario.session_id) != "remote":
            check.fail(
                ("session", "grant"), f"grants apply to remote sessions only; channel '{scenario.channel}' is not"
            )
    scenario.rules_see = _rules_see(check, session.get("rules", {}))

    expect = check.table(("expect",), top.get("expect", {}), EXPECT) or {}
    scenario.order = expect.get("order", "at-least")
    scenario.expected = _calls(check, expect.get("call"), ("expect", "call"))
    scenario.forbidden = _calls(check, expect.get("forbid"), ("expect", "forbid"))

    answer = check.table(("answer",), top.get("answer", {}), ANSWER) or {}
    scenario.contains = _listed(answer.get("contains"))
    scenario.regex = _listed(answer.get("regex"))
    scenario.check = answer.get("check")
    scenario.ended = answer.get("ended")

    limits = check.table(("limits",), top.get("limits", {}), LIMITS) or {}
    scenario.max_steps = limits.get("steps")
    scenario.max_tokens = limits.get("tokens")
    scenario.seconds = limits.get("seconds")

    found = [_reply(check, item, ("reply", n)) for n, item in enumerate(top.get("reply") or ())]
    scenario.replies = [p for p in found if p is not None]
    issues = check.issues
    if not issues and not (  # a misspelt section says so itself: "checks nothing" would only add noise
        scenario.expected
        or scenario.forbidden
        or scenario.contains
        or scenario.regex
        or scenario.check
        or scenario.ended
    ):
        issues.append(
            ConfigIssue(
                source.rel, 1, "the scenario checks nothing: add [[expect.call]], expect.forbid or an [answer] check"
            )
        )
    issues.sort(key=lambda i: i.line or 0)
    return (None if issues else scenario), issues


def read_scenario(path: str | Path) -> tuple[Scenario | None, list[ConfigIssue]]:
    """One scenario file, or every problem in it (FILE:LINE: message, FILE as the caller wrote it)."""
    p = Path(path)
    shown = str(path)
    try:
        raw = read_config_bytes(Path.cwd(), str(p.absolute()))
        if raw is None:
            return None, [ConfigIssue(shown, None, "no such scenario file")]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, [ConfigIssue(shown, raw[: exc.start].count(b"\n") + 1, "file is not valid UTF-8")]
        source = TomlSource.parse(shown, text)
    except TomlSyntaxError as exc:
        return None, [ConfigIssue(shown, exc.issue.line, exc.issue.message)]
    return parse_scenario(source, p.absolute().parent, p.stem)


def scenario_files(paths: list[str | Path]) -> list[Path]:
    """Files as given; a directory means every *.toml in it (sorted), except variants.toml."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out += sorted(f for f in p.glob("*.toml") if f.name != "variants.toml")
        else:
            out.append(p)
    return out


def load_scenarios(paths: list[str | Path]) -> list[Scenario]:
    """Every scenario, or a ConfigError with every problem of every file."""
    scenarios, issues = [], []
    for path in scenario_files(paths):
        found, problems = read_scenario(path)
        issues += problems
        if found is not None:
            scenarios.append(found)
    names = [s.name for s in scenarios]
    for s in scenarios:
        if names.count(s.name) > 1:
            issues.append(ConfigIssue(s.path, None, f"another scenario is also named '{s.name}'; names must differ"))
    if issues:
        raise ConfigError(issues)
    if not scenarios:
        raise ConfigError([ConfigIssue(", ".join(map(str, paths)) or ".", None, "no scenario files found")])
    return scenarios
