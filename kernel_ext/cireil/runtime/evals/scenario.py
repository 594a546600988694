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

from ..conditions import CHANNELS, RuleContext
from ..config.checker import suggestion as _hint
from ..config.checker import unknown_key
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_config_bytes
from ..errors import ConfigError, ConfigIssue
from ..session import platform_of
from .matchers import MATCHER_KINDS, ORDERS, CallSpec, Matcher

TOP_KEYS = (
    "name",
    "description",
    "message",
    "messages",
    "attachments",
    "session",
    "expect",
    "answer",
    "limits",
    "reply",
)
SESSION_KEYS = ("name", "channel", "grant", "rules")
RULES_KEYS = ("channel", "guild", "channel_id", "parent", "nsfw")
_DISCORD_IDS = ("guild", "channel_id", "parent")
EXPECT_KEYS = ("order", "call", "forbid")
CALL_KEYS = ("tool", "args", "ok")
ANSWER_KEYS = ("contains", "regex", "check", "ended")
LIMIT_KEYS = ("steps", "tokens", "seconds")
REPLY_KEYS = ("calls", "text", "reasoning")
ENDINGS = ("respond", "no-response")
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


def _rules_see(r: _Reader, session: dict) -> RuleContext | None:
    """[session.rules]: what conditions.toml rules are told about the session, checked as `%cireil session`
    checks its options (the turns run in the scenario's own session; only the rules see another channel)."""
    rules = r.table(session.get("rules"), ("session", "rules"), RULES_KEYS)
    if not rules:
        return None
    path = ("session", "rules")
    ids: dict[str, str] = {}
    for key in _DISCORD_IDS:
        value = rules.get(key)
        if value is None:
            continue
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else value
        if not isinstance(text, str) or not text.isdigit():
            r.fail((*path, key), f"'{key}' takes a Discord id, digits only (got {value!r})")
            return None
        ids[key] = text
    nsfw = rules.get("nsfw", False)
    if not isinstance(nsfw, bool):
        r.fail((*path, "nsfw"), f"'nsfw' must be true or false, not {nsfw!r}")
        return None
    discordish = [k for k in (*_DISCORD_IDS, "nsfw") if k in rules]
    channel = r.string(rules, path, "channel", choices=CHANNELS) or ("discord" if discordish else None)
    if channel is None:
        return None
    if channel != "discord" and discordish:
        r.fail(
            (*path, discordish[0]),
            "guild, channel_id, parent and nsfw describe Discord: use them with "
            f"channel = \"discord\" (not '{channel}')",
        )
        return None
    if nsfw and ("guild" not in ids or "parent" in ids):
        r.fail((*path, "nsfw"), "nsfw needs a guild and no parent: DMs and threads are never NSFW in the original")
        return None
    return RuleContext(
        channel, guild=ids.get("guild"), channel_id=ids.get("channel_id"), parent_id=ids.get("parent"), nsfw=nsfw
    )


class _Reader:
    """Collects every problem of one file, each at its line."""

    def __init__(self, source: TomlSource) -> None:
        self.source = source
        self.issues: list[ConfigIssue] = []

    def fail(self, path: tuple, message: str) -> None:
        self.issues.append(self.source.issue(path, message))

    def table(self, data: Any, path: tuple, known: tuple[str, ...]) -> dict:
        if data is None:
            return {}
        if not isinstance(data, dict):
            self.fail(path, f"'{'.'.join(map(str, path))}' must be a table")
            return {}
        for key in data:
            if key not in known:
                self.fail((*path, key), unknown_key(key, known, path))
        return data

    def string(self, data: dict, path: tuple, key: str, *, choices: tuple[str, ...] = ()) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail((*path, key), f"'{key}' must be a non-empty string")
            return None
        if choices and value not in choices:
            self.fail(
                (*path, key), f"'{key}' must be one of {', '.join(choices)}, not '{value}'{_hint(value, choices)}"
            )
            return None
        return value

    def strings(self, data: dict, path: tuple, key: str) -> list[str]:
        value = data.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail((*path, key), f"'{key}' must be a string or a list of non-empty strings")
            return []
        return value

    def number(self, data: dict, path: tuple, key: str, *, whole: bool) -> Any:
        value = data.get(key)
        if value is None:
            return None
        ok = isinstance(value, int) if whole else isinstance(value, int | float)
        if isinstance(value, bool) or not ok or value <= 0:
            kind = "a whole number" if whole else "a number"
            self.fail((*path, key), f"'{key}' must be {kind} above 0, not {value!r}")
            return None
        return value

    def matcher(self, value: Any, path: tuple) -> Matcher | None:
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in MATCHER_KINDS:
            kind, inner = next(iter(value.items()))
            if kind == "any":
                if inner is not True:
                    self.fail(path, "'any' must be true: { any = true } matches every value")
                    return None
                return Matcher("any")
            if kind == "regex":
                if not isinstance(inner, str):
                    self.fail(path, "'regex' must be a string")
                    return None
                try:
                    re.compile(inner)
                except re.error as exc:
                    self.fail(path, f"invalid regular expression {inner!r}: {exc}")
                    return None
            return Matcher(kind, inner)
        if isinstance(value, dict) and any(k in MATCHER_KINDS for k in value):
            self.fail(
                path,
                f"a matcher table has exactly one key of {', '.join(MATCHER_KINDS)}; "
                "to match a table exactly, write { exact = { ... } }",
            )
            return None
        return Matcher("exact", value)

    def call(self, value: Any, path: tuple) -> CallSpec | None:
        if isinstance(value, str) and value:
            return CallSpec(value, (), self.source.line_of(*path))
        if not isinstance(value, dict):
            self.fail(path, 'a call is a table { tool = "NAME", args = { ... } } (or, in forbid, a tool name)')
            return None
        self.table(value, path, CALL_KEYS)
        tool = value.get("tool")
        if not isinstance(tool, str) or not tool:
            self.fail(path, "a call needs 'tool', the tool's name")
            return None
        args = value.get("args", {})
        if not isinstance(args, dict):
            self.fail((*path, "args"), "'args' must be a table of argument name = matcher")
            return None
        ok = value.get("ok")
        if ok is not None and not isinstance(ok, bool):
            self.fail((*path, "ok"), "'ok' must be true (the call must succeed) or false (it must fail)")
            ok = None
        matchers = []
        for key, raw in args.items():
            m = self.matcher(raw, (*path, "args", key))
            if m is not None:
                matchers.append((key, m))
        return CallSpec(tool, tuple(matchers), self.source.line_of(*path), ok)

    def calls(self, value: Any, path: tuple) -> list[CallSpec]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"'{path[-1]}' must be a list of calls")
            return []
        found = [self.call(item, (*path, n)) for n, item in enumerate(value)]
        return [c for c in found if c is not None]

    def reply(self, value: Any, path: tuple) -> PinnedReply | None:
        table = self.table(value, path, REPLY_KEYS)
        if not table:
            if isinstance(value, dict):
                self.fail(path, "a pinned reply needs 'calls' or 'text'")
            return None
        calls = []
        for spec in self.calls(table.get("calls"), (*path, "calls")):
            calls.append((spec.tool, _plain_args(table["calls"][len(calls)])))
        text = self.string(table, path, "text")
        reasoning = self.string(table, path, "reasoning")
        if not calls and text is None:
            self.fail(path, "a pinned reply needs 'calls' or 'text'")
        return PinnedReply(tuple(calls), text, reasoning)


def _plain_args(call: Any) -> dict:
    return dict(call.get("args") or {}) if isinstance(call, dict) else {}


def parse_scenario(source: TomlSource, base: Path, default_name: str) -> tuple[Scenario | None, list[ConfigIssue]]:
    r = _Reader(source)
    data = r.table(source.data, (), TOP_KEYS)
    name = r.string(data, (), "name") or default_name
    messages = r.strings(data, (), "messages")
    if "message" in data:
        if messages:
            r.fail(("message",), "write either 'message' or 'messages', not both")
        messages = r.strings(data, (), "message")[:1] if isinstance(data["message"], str) else []
        if not isinstance(data["message"], str) or not data["message"].strip():
            r.fail(("message",), "'message' must be a non-empty string (for several turns, use 'messages')")
    if not messages and "message" not in data and "messages" not in data:
        r.issues.append(ConfigIssue(source.rel, 1, "a scenario needs 'message' (or 'messages'), what the person says"))
    attachments = []
    for n, raw in enumerate(r.strings(data, (), "attachments")):
        path = (base / raw).resolve()
        if not path.is_file():
            r.fail(("attachments",), f"attachment {raw!r} (item {n + 1}): no such file next to the scenario")
        attachments.append(str(path))
    scenario = Scenario(name=name, path=source.rel, messages=messages, attachments=attachments)
    scenario.description = r.string(data, (), "description") or ""

    session = r.table(data.get("session"), ("session",), SESSION_KEYS)
    scenario.session_name = r.string(session, ("session",), "name") or "eval"
    scenario.channel = r.string(session, ("session",), "channel") or "notebook"
    if ":" in scenario.channel or ":" in scenario.session_name:
        r.fail(("session",), "session 'name' and 'channel' cannot contain ':' (the session id is CHANNEL:NAME)")
    if "grant" in session:
        scenario.grant = r.strings(session, ("session",), "grant")
        if platform_of(scenario.session_id) != "remote":
            r.fail(("session", "grant"), f"grants apply to remote sessions only; channel '{scenario.channel}' is not")
    scenario.rules_see = _rules_see(r, session)

    expect = r.table(data.get("expect"), ("expect",), EXPECT_KEYS)
    scenario.order = r.string(expect, ("expect",), "order", choices=ORDERS) or "at-least"
    scenario.expected = r.calls(expect.get("call"), ("expect", "call"))
    scenario.forbidden = r.calls(expect.get("forbid"), ("expect", "forbid"))

    answer = r.table(data.get("answer"), ("answer",), ANSWER_KEYS)
    scenario.contains = r.strings(answer, ("answer",), "contains")
    scenario.regex = r.strings(answer, ("answer",), "regex")
    for pattern in scenario.regex:
        try:
            re.compile(pattern)
        except re.error as exc:
            r.fail(("answer", "regex"), f"invalid regular expression {pattern!r}: {exc}")
    scenario.check = r.string(answer, ("answer",), "check")
    if scenario.check and not DOTTED.match(scenario.check):
        r.fail(("answer", "check"), f"'check' must be a dotted name module.function, not {scenario.check!r}")
    scenario.ended = r.string(answer, ("answer",), "ended", choices=ENDINGS)

    limits = r.table(data.get("limits"), ("limits",), LIMIT_KEYS)
    scenario.max_steps = r.number(limits, ("limits",), "steps", whole=True)
    scenario.max_tokens = r.number(limits, ("limits",), "tokens", whole=True)
    scenario.seconds = r.number(limits, ("limits",), "seconds", whole=False)

    replies = data.get("reply")
    if replies is not None:
        if not isinstance(replies, list):
            r.fail(("reply",), "pinned replies are an array of tables: [[reply]]")
        else:
            found = [r.reply(item, ("reply", n)) for n, item in enumerate(replies)]
            scenario.replies = [p for p in found if p is not None]
    if not r.issues and not (  # a misspelt section says so itself: "checks nothing" would only add noise
        scenario.expected
        or scenario.forbidden
        or scenario.contains
        or scenario.regex
        or scenario.check
        or scenario.ended
    ):
        r.issues.append(
            ConfigIssue(
                source.rel, 1, "the scenario checks nothing: add [[expect.call]], expect.forbid or an [answer] check"
            )
        )
    r.issues.sort(key=lambda i: i.line or 0)
    return (None if r.issues else scenario), r.issues


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
