"""config/conditions.toml: which conditional blocks load and which paths the agent may touch, per session.

The original's rule language (upstream-formats §3.3, runtime-behavior §2.4): three optional tables
`blocks`, `memories` and `workspace`, each mapping a name or path key to `{action, when, mode}`.
A condition is one of `tui`, `internal`, `discord:nsfw`, `discord:dm`, `discord:dm:<id>`,
`discord:guild:<id>`, `discord:channel:<id>`, `discord:forum:<id>` (ids: digits only, as the original), optionally
negated with `!`.

Path decision, as the original: no key matches -> allow; a matching `deny` whose `when` holds -> deny;
else a matching `allow` whose `when` holds -> allow; else deny. Unlike the original, both the
requested path and rule keys are normalized first, so `/memories//private/x` cannot slip past a
`/private/` rule, and the real location a symlink leads to is checked too (files/paths.py asks for both).

Sessions are described by a RuleContext: derived from the session (its platform, and for Discord
sessions the ids the original keeps in `meta`), or set by a person in the notebook
(`%cireil session --channel discord --guild ID --nsfw`) to see what the agent would see there.
A notebook session with nothing set is on no platform a rule names: only negated conditions hold.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ConfigIssue, ToolError
from ..files.layout import CONDITIONS_FILE

if TYPE_CHECKING:
    from ..config.checker import Checker
    from ..config.tomlsource import TomlSource
    from .state import Session

PATH_TABLES = ("memories", "workspace")
TABLES = ("blocks", *PATH_TABLES)
# The original's schema (config/schemas/conditions.ts): ids are ASCII digits only, as its `\d` with the u flag
# is. Matched whole (fullmatch): `$` alone would also take a trailing newline, which the original refuses.
# Its own tests use ids such as `guild1`, but only in rules built in code: its conditions.toml loader refuses
# them (verified with its valibot schema), so cireil does too, saying so.
_CONDITION = re.compile(r"(!?)(tui|internal|discord:nsfw|discord:dm|discord:(dm|guild|channel|forum):([0-9]+))")
_NAMED_ID = re.compile(r"!?discord:(dm|guild|channel|forum):(.*)", re.DOTALL)
SUPPORTED = (
    "[!]discord:nsfw, [!]discord:dm, [!]discord:dm:<id>, [!]discord:guild:<id>, [!]discord:channel:<id>, "
    "[!]discord:forum:<id>, [!]tui, [!]internal"
)
CHANNELS = ("discord", "tui", "internal", "matrix", "notebook")


@dataclass(frozen=True)
class RuleContext:
    """What conditions are evaluated against: the platform and, on Discord, the ids and the NSFW flag."""

    channel: str = "notebook"
    guild: str | None = None
    channel_id: str | None = None  # the Discord channel, thread or DM channel id
    parent_id: str | None = None  # the parent channel of a thread
    nsfw: bool = False

    @classmethod
    def of_session(cls, session: Session) -> RuleContext:
        platform = session.platform
        if platform in ("tui", "internal", "matrix"):
            return cls(channel=platform)
        if platform != "discord":
            return cls()
        # the row's meta as the original wrote it (isNsfw, parentChannelId live only there), then what was set
        # on the session in memory (`%cireil session --channel discord --guild ...`)
        stored = (getattr(session, "store_state", None) or {}).get("meta")
        meta = {
            **(stored if isinstance(stored, dict) else {}),
            **{k: v for k, v in (session.meta or {}).items() if v is not None},
        }
        # the id is discord:<channelId>|<guildId> (guild) or discord:<dmChannelId>; meta wins when present
        ident = session.id[len("discord:") :]
        channel_id, _, guild = ident.partition("|")
        channel_id = str(meta.get("channelId") or channel_id) or None
        guild = str(meta.get("guildId") or guild) or None
        parent = meta.get("parentChannelId")
        nsfw = bool(meta.get("isNsfw")) and guild is not None and not parent  # DMs and threads are never NSFW
        return cls("discord", guild, channel_id, str(parent) if parent else None, nsfw)

    def describe(self) -> str:
        """As the original's denial message shows it: guild for guild sessions, nsfw for any Discord one."""
        parts = [f"channel: {self.channel}"]
        if self.channel == "discord":
            if self.guild:
                parts.append(f"guild: {self.guild}")
            parts.append(f"nsfw: {'true' if self.nsfw else 'false'}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "guild": self.guild,
            "channel_id": self.channel_id,
            "parent_id": self.parent_id,
            "nsfw": self.nsfw,
        }


@dataclass(frozen=True)
class Condition:
    text: str
    negate: bool
    kind: str  # tui | internal | discord:nsfw | discord:dm | dm | guild | channel | forum
    ident: str | None = None

    @classmethod
    def parse(cls, text: str) -> Condition | None:
        m = _CONDITION.fullmatch(text)
        if m is None:
            return None
        if m.group(3):
            return cls(text, bool(m.group(1)), m.group(3), m.group(4))
        return cls(text, bool(m.group(1)), m.group(2))

    def _raw(self, ctx: RuleContext) -> bool:
        if self.kind in ("tui", "internal"):
            return ctx.channel == self.kind
        if ctx.channel != "discord":  # every discord:* is false outside Discord
            return False
        if self.kind == "discord:nsfw":
            return ctx.nsfw
        if self.kind == "discord:dm":
            return ctx.guild is None
        if self.kind == "dm":
            return ctx.guild is None and ctx.channel_id == self.ident
        if self.kind == "guild":
            return ctx.guild == self.ident
        if self.kind == "channel":
            return ctx.channel_id == self.ident
        return ctx.parent_id == self.ident  # forum: any thread whose parent is that channel

    def holds(self, ctx: RuleContext) -> bool:
        return self._raw(ctx) != self.negate


@dataclass(frozen=True)
class Rule:
    table: str  # blocks | memories | workspace
    key: str  # the block name, or the normalized path key (leading '/', trailing '/' kept)
    action: str  # load | allow | deny
    when: tuple[Condition, ...]
    mode: str = "or"
    line: int | None = None

    def holds(self, ctx: RuleContext) -> bool:
        results = (c.holds(ctx) for c in self.when)
        return all(results) if self.mode == "and" else any(results)

    def matches(self, rel: str) -> bool:
        """rel is the part after the root, '/' for the root itself."""
        if self.key.endswith("/"):
            return rel == self.key[:-1] or rel.startswith(self.key) or self.key == "/"
        return rel == self.key

    @property
    def when_text(self) -> str:
        joiner = " and " if self.mode == "and" else " or "
        return joiner.join(c.text for c in self.when)

    @property
    def target(self) -> str:
        """What the rule is about, as a person reads it: the block file or the sandbox path."""
        if self.table == "blocks":
            return f"/blocks/conditional/{self.key}.md"
        return f"/{self.table}{self.key}" if self.key != "/" else f"/{self.table}/"

    def describe(self) -> str:
        return f"{self.target}: {self.action} when {self.when_text}"


@dataclass(frozen=True)
class Decision:
    path: str
    allowed: bool
    matched: tuple[Rule, ...] = ()  # the rules whose key matches the path
    because: Rule | None = None  # the rule that decided, None when none matched or none applied


@dataclass
class Conditions:
    """The parsed file; empty when it is missing."""

    blocks: list[Rule] = field(default_factory=list)
    paths: dict[str, list[Rule]] = field(default_factory=lambda: {t: [] for t in PATH_TABLES})

    @property
    def empty(self) -> bool:
        return not self.blocks and not any(self.paths.values())

    @property
    def has_path_rules(self) -> bool:
        return any(self.paths.values())

    def blocks_for(self, ctx: RuleContext) -> list[Rule]:
        """The block rules that hold, in file order."""
        return [r for r in self.blocks if r.holds(ctx)]

    def decide(self, sandbox_path: str, ctx: RuleContext) -> Decision:
        """The decision for a normalized sandbox path; paths outside /memories and /workspace are allowed."""
        root, rel = _split(sandbox_path)
        if root not in PATH_TABLES:
            return Decision(sandbox_path, True)
        matched = tuple(r for r in self.paths[root] if r.matches(rel))
        if not matched:
            return Decision(sandbox_path, True)
        for rule in matched:
            if rule.action == "deny" and rule.holds(ctx):
                return Decision(sandbox_path, False, matched, rule)
        for rule in matched:
            if rule.action == "allow" and rule.holds(ctx):
                return Decision(sandbox_path, True, matched, rule)
        return Decision(sandbox_path, False, matched, None)

    def check(self, sandbox_path: str, ctx: RuleContext, shown: str | None = None) -> None:
        if not self.decide(sandbox_path, ctx).allowed:
            raise ToolError(
                f"Access denied: path '{shown or sandbox_path}' is not accessible in the current context "
                f"({ctx.describe()})."
            )

    def denied_areas(self, ctx: RuleContext) -> list[tuple[str, bool]]:
        """For exec: (sandbox path, denied?) of every path key, shallowest first.

        Decisions only change at rule keys (a path's matching rules are the keys above it), so hiding
        each denied key and re-exposing each allowed one below a hidden one, in depth order, gives the
        sandbox exactly the file tools' answers.
        """
        out: list[tuple[str, bool]] = []
        for root in PATH_TABLES:
            for rule in self.paths[root]:
                path = f"/{root}{rule.key.rstrip('/')}" if rule.key != "/" else f"/{root}"
                if any(p == path for p, _ in out):
                    continue
                out.append((path, not self.decide(path, ctx).allowed))
        out.sort(key=lambda item: item[0].count("/"))
        return out


@dataclass(frozen=True)
class PathAccess:
    """The access check paths.SandboxPaths runs for one session: its rules and what they see of it."""

    conditions: Conditions
    context: RuleContext

    def __call__(self, shown: str, sandbox_path: str) -> None:
        self.conditions.check(sandbox_path, self.context, shown)


def _split(sandbox_path: str) -> tuple[str, str]:
    parts = sandbox_path.lstrip("/").split("/", 1)
    return parts[0], "/" + (parts[1] if len(parts) > 1 else "")


def _normal_key(key: str) -> str:
    norm = posixpath.normpath("/" + key.lstrip("/")) if key.strip("/") else "/"
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if key.endswith("/") and norm != "/":
        norm += "/"
    return norm


def _parse_when(check: Checker, where: tuple, raw: str | list) -> tuple[Condition, ...]:
    out: list[Condition] = []
    for item in [raw] if isinstance(raw, str) else raw:
        cond = Condition.parse(item) if isinstance(item, str) else None
        if cond is None:  # the original's wording, then why
            check.fail(where, f"Invalid condition format {item!r}. Supported: {SUPPORTED}{_why(item)}")
        else:
            out.append(cond)
    return tuple(out)


def _why(item: Any) -> str:
    """What is wrong with an id the original refuses too; '' for other mistakes (the supported list says it)."""
    named = _NAMED_ID.fullmatch(item) if isinstance(item, str) else None
    if named is None:
        return ""
    kind, ident = named.groups()
    return (
        f" (the {kind} id {ident!r} is not a Discord id: ids are digits only, as Discord shows them with Developer "
        "Mode on; the original CireilClaw refuses this file too)"
    )


def _rule_fields(table: str) -> dict[str, Any]:
    from ..base import params

    return {
        "action": params.String(enum=("load",) if table == "blocks" else ("allow", "deny")),
        "when": params.AnyOf(
            options=(params.String(), params.Array(min_items=1)),
            description="a condition string or a non-empty array of them",
        ),
        "mode": params.String(enum=("or", "and"), default="or"),
    }


def parse_conditions(source: TomlSource | None) -> tuple[Conditions, list[ConfigIssue]]:
    """Every problem at once; the original's schema is strict, so unknown keys are errors too."""
    result = Conditions()
    if source is None:
        return result, []
    from ..config.checker import Checker, toml_repr

    check = Checker(source)
    issues = check.issues
    unknown = check.unknown(source.data, TABLES)
    for table, rules in source.data.items():
        if table in unknown:
            continue
        if not isinstance(rules, dict):
            check.fail((table,), f"'{table}' must be a table of rules, not {toml_repr(rules)}")
            continue
        for key, body in rules.items():
            rule = _parse_rule(check, table, key, body)
            if rule is None:
                continue
            if table == "blocks":
                result.blocks.append(rule)
            elif any(r.key == rule.key for r in result.paths[table]):
                issues.append(
                    source.issue(
                        (table, key),
                        f"'{key}' is the same path as an earlier key once normalized to '{rule.key}'; "
                        "one path holds one rule",
                    )
                )
            else:
                result.paths[table].append(rule)
    issues.sort(key=lambda i: i.line or 0)  # in file order, as an editor shows them
    return result, issues


def _parse_rule(check: Checker, table: str, key: str, body: Any) -> Rule | None:
    source, issues = check.source, check.issues
    where = (table, key)
    mark = check.mark()
    fields = check.table(where, body, _rule_fields(table))
    if fields is None:
        return None
    when = _parse_when(check, (*where, "when"), fields["when"]) if "when" in fields else ()
    if check.errors_since(mark):
        return None
    action, mode = fields["action"], fields["mode"]
    line = source.line_of(*where)
    if table == "blocks":
        if not _block_name_ok(key):
            issues.append(
                source.issue(
                    where,
                    f"block name '{key}' does not name a file under blocks/conditional/; cireil never loads it",
                    severity="warning",
                )
            )
            return None
        return Rule(table, key, action, when, mode, line)
    norm = _normal_key(key)
    shown = key if key.startswith("/") else "/" + key
    if "\0" in key:
        issues.append(source.issue(where, "a path key must not contain NUL"))
        return None
    if norm != shown:
        issues.append(
            source.issue(
                where,
                f"path key '{key}' is not in normal form; the original matches it only as written, cireil "
                f"matches it as '{norm}'",
                severity="warning",
            )
        )
    return Rule(table, norm, action, when, mode, line)


def _block_name_ok(name: str) -> bool:
    if not name or "\0" in name or name.startswith("/"):
        return False
    return ".." not in name.split("/") and posixpath.normpath(name) == name


# -- conditional blocks --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConditionalBlock:
    name: str
    description: str
    body: str
    rule: Rule

    @property
    def file_path(self) -> str:
        return f"/blocks/conditional/{self.name}.md"


def conditional_blocks(agent_dir: Path, rules: Iterable[Rule]) -> tuple[list[ConditionalBlock], list[ConfigIssue]]:
    """The blocks the holding rules load, in file order. A missing file is skipped (as the original does);
    a file without valid `+++` TOML frontmatter is an error that fails the turn."""
    from ..files import frontmatter
    from ..files.paths import read_agent_file

    blocks: list[ConditionalBlock] = []
    issues: list[ConfigIssue] = []
    for rule in rules:
        rel = f"blocks/conditional/{rule.key}.md"
        try:
            # a FIFO must not hang a turn, a huge file not fill the prompt
            text = read_agent_file(agent_dir, rel).decode("utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            issues.append(ConfigIssue(rel, None, f"cannot be read: {exc}"))
            continue
        found = frontmatter.block_parts(text, rel, issues)
        if found is not None:
            blocks.append(ConditionalBlock(rule.key, *found, rule))
    return blocks, issues


def block_file_warnings(agent_dir: Path, conditions: Conditions) -> list[ConfigIssue]:
    """At load: a block file a rule names that is missing, or whose frontmatter would fail a turn."""
    out: list[ConfigIssue] = []
    for rule in conditions.blocks:
        rel = f"blocks/conditional/{rule.key}.md"
        if not (agent_dir / rel).exists():
            out.append(
                ConfigIssue(
                    CONDITIONS_FILE,
                    rule.line,
                    f"block '{rule.key}': {rel} does not exist; the rule loads nothing (as in the original)",
                    key=f"blocks.{rule.key}",
                    severity="warning",
                )
            )
    _, problems = conditional_blocks(agent_dir, conditions.blocks)
    for issue in problems:
        out.append(
            ConfigIssue(issue.file, issue.line, f"{issue.message} (turns fail where it loads)", severity="warning")
        )
    return out


# -- exec ----------------------------------------------------------------------------------------------
def exec_overlay(access: PathAccess, locate: Any, bind: Any, mounted: Iterable[str] = ()) -> list[str]:
    """bwrap arguments that make the sandbox agree with the file tools: each denied area an empty tmpfs
    (a denied file: /dev/null), each allowed area below a hidden one bound back. `locate` maps a sandbox
    path to a paths.ResolvedPath without the access check; `bind(host realpath, sandbox path, read_only=)`
    gives the arguments binding it back (exec/bindfds.py: through a descriptor, as a command may swap
    a folder on the way for a symlink between this check and bwrap starting). Areas that do not exist
    are left alone: there is nothing in them to hide (exec can create one, but a file tool still cannot
    read it here).

    The folders between a hidden area and the mount above it are bound onto themselves (see _pin): a
    command could otherwise rename one (`mv /workspace/shared /workspace/s2`) and find the area under
    a name no rule denies, in this call's sandbox and for every later call and file tool. `mounted`:
    the sandbox paths sandbox.toml mounts on (bound before the overlay, so never covered by a pin).
    """
    import os

    from ..files.paths import EXEC_WRITABLE

    visible: dict[str, bool] = {}
    pinned = {f"/{root}" for root in EXEC_WRITABLE} | set(mounted)  # mount points: cannot be renamed
    args: list[str] = []
    for path, denied in access.conditions.denied_areas(access.context):
        above = [p for p in visible if path.startswith(p + "/")]
        parent_visible = visible[max(above, key=len)] if above else True
        visible[path] = not denied
        if denied == (not parent_visible):
            continue  # already as it should be
        try:
            resolved = locate(path)
        except ToolError:
            continue  # outside the sandbox or a symlink escape: no file tool reaches it either
        host = str(resolved.host)
        if not os.path.lexists(host):
            visible[path] = parent_visible
            continue
        if denied:
            args += _pin(path, pinned, locate, bind)
            args += ["--tmpfs", path] if os.path.isdir(host) else ["--ro-bind", "/dev/null", path]
        else:
            args += bind(host, path, read_only=resolved.read_only)
        pinned.add(path)
    return args


def _pin(path: str, pinned: set[str], locate: Any, bind: Any) -> list[str]:
    """Bind each folder between the deepest mount point above `path` and `path` onto itself, so that
    none of them can be renamed in the sandbox (rename refuses a mount point: EBUSY).

    Only the folders below that mount point: above it may lie a hidden area's tmpfs, whose folders
    must not be replaced by the host's. A folder with a mount point below it is not pinned either (the
    pin would cover that mount); such a folder can still be renamed. A folder that cannot be pinned is
    still marked, so that no later pin is bound over a hide made below it meanwhile.
    """
    import os

    if not any(path.startswith(p + "/") for p in pinned):
        return []  # not below a root exec mounts (/blocks): nothing of it is in the sandbox to move
    anchor = max((p for p in pinned if path.startswith(p + "/")), key=len)
    parts = path[len(anchor) :].strip("/").split("/")[:-1]
    args: list[str] = []
    folder = anchor
    for name in parts:
        folder = f"{folder}/{name}"
        if any(p.startswith(folder + "/") for p in pinned):
            continue
        pinned.add(folder)
        try:
            resolved = locate(folder)
        except ToolError:
            break
        if resolved.mount is not None and folder == f"/workspace/{resolved.mount.target}":
            continue  # a sandbox.toml mount: a mount point already
        if not os.path.isdir(resolved.host):
            break
        args += bind(str(resolved.host), folder, read_only=resolved.read_only)
    return args
