"""What the original CireilClaw runtime needs of a runtime root that cireil creates or shares with it.

upstream-formats.md §1.2, §3.7, §3.8, §7: the root (`<root>/agents/<slug>/` holds the agents) carries
`config/migrations.json`, the list of config migrations already applied. Without it the original
prompts at startup and one of its migrations rewrites a modern engine.toml into a placeholder, so a
root cireil creates gets one listing every migration the original knows; a user's own is never
touched. The original's own `init` does not write one (§1.2): `adopt` (`cireil init --adopt DIR`) gives an
existing root the same file. `cireilclaw run` also stops when any agent lacks `config/channels/discord.toml`.
`compatibility_warnings` says, as warnings, what the original would refuse or overwrite.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from ..base.errors import CireilError, ConfigIssue
from ..files import safefs
from ..files.layout import AgentLayout

MIGRATIONS_FILE = "config/migrations.json"
DISCORD_FILE = "config/channels/discord.toml"
# Every migration id of the original's snapshot, in the order it applies them (upstream-formats.md §3.8).
MIGRATION_IDS = (
    "20260305000000_tool_rename_discord_attachments",
    "20260309000000_skills_agentskills_format",
    "20260311120000_tasks_folder",
    "20260322000000_assistant_message_ids",
    "20260406000000_engine_providers",
    "20260412000000_brave_search_plugin",
    "20260425000000_rename_anthropic_oauth",
    "20260811000000_move_exec_binaries_to_bwrap",
)
# Tools cireil has and the original does not: it refuses a tools.toml naming them, even as false.
CIREIL_ONLY_TOOLS = ("invoke",)
ADOPT_COMMAND = "cireil init --adopt"  # what dry-run names for a root without migrations.json


class RootError(CireilError):
    """`adopt` was given something that is not a runtime root, or a root that has its migrations.json already."""


def migrations_text() -> str:
    """migrations.json as the original writes it: JSON.stringify(value, undefined, 2), no final newline."""
    return json.dumps({"applied": list(MIGRATION_IDS)}, indent=2)


def write_migrations_json(root: Path) -> Path | None:
    """Create `<root>/config/migrations.json` marking every migration applied; None if one exists already."""
    path = root / MIGRATIONS_FILE
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never replaces the user's file
    except FileExistsError:
        return None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(migrations_text())
    return path


def find_root(directory: str | os.PathLike[str]) -> Path:
    """The runtime root `directory` names: the root itself (it holds agents/), its agents/ folder, or an agent in
    it (`<root>/agents/<slug>/`). Raises RootError for anything else."""
    path = Path(directory).expanduser().absolute()
    if not path.is_dir():
        raise RootError(f"{directory} {'is not a directory' if path.exists() else 'does not exist'}")
    if (path / "agents").is_dir() and not (path / "config" / "tools.toml").exists():
        return path
    if path.name == "agents" and path.parent != path:
        return path.parent
    if path.parent.name == "agents":
        return path.parent.parent
    raise RootError(
        f"{directory} is neither a runtime root (a folder holding agents/, such as ~/.cireilclaw) nor an agent "
        "inside one (<root>/agents/<slug>/)"
    )


def adopt(directory: str | os.PathLike[str]) -> Path:
    """Write `config/migrations.json` for the existing runtime root `directory` names (find_root), listing every
    migration of the original as applied, exactly as a root cireil creates gets it; nothing else is touched.
    Returns the file written; raises RootError when it exists already (it is never replaced)."""
    root = find_root(directory)
    written = write_migrations_json(root)
    if written is None:
        raise RootError(
            f"{root / MIGRATIONS_FILE} exists already and is left as it is; "
            f"`cireil dry-run {shlex.quote(str(root))}` says whether it lacks any migration "
            "(`cireilclaw migrate` applies those)"
        )
    return written


def _root_issue(root: Path, rel: str, message: str) -> ConfigIssue:
    # outside the agent directory, so named in full rather than relative to it
    return ConfigIssue(str(root / rel), None, message, severity="warning")


def compatibility_warnings(layout: AgentLayout) -> list[ConfigIssue]:
    """What the original runtime would refuse at startup (or at a turn) for this agent and its root.

    Only for an agent inside a runtime root (`<root>/agents/<slug>/`): elsewhere the original never sees it.
    """
    root = layout.runtime_root
    if root is None:
        return []
    out = _migrations_warnings(root)
    out += _agent_warnings(layout.directory)
    try:
        others = sorted((root / "agents").iterdir())
    except OSError as exc:
        return [*out, _root_issue(root, "agents", f"cannot be listed ({exc.strerror or exc}): the original reads it")]
    for other in others:
        if other.is_dir() and other != layout.directory and not (other / DISCORD_FILE).is_file():
            out.append(
                _root_issue(
                    root,
                    f"agents/{other.name}",
                    "the original CireilClaw takes every folder under agents/ for an agent, and `cireilclaw run` "
                    f"stops because this one has no {DISCORD_FILE}; move it out of agents/ or give it one",
                )
            )
    return out


def _migrations_warnings(root: Path) -> list[ConfigIssue]:
    path = root / MIGRATIONS_FILE
    fix = "`cireilclaw migrate` applies them (back up every engine.toml first)"
    try:
        data = json.loads(safefs.read_host_file(path).decode("utf-8"))  # a FIFO: an error, never a hang
    except FileNotFoundError:
        return [
            _root_issue(
                root,
                MIGRATIONS_FILE,
                "missing: the original CireilClaw then asks at startup to run every config migration, and "
                "20260406000000_engine_providers rewrites a modern engine.toml into a placeholder provider; "
                f"create it with `{ADOPT_COMMAND} {shlex.quote(str(root))}`, which lists all "
                f"{len(MIGRATION_IDS)} migrations as applied",
            )
        ]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [
            _root_issue(
                root,
                MIGRATIONS_FILE,
                f"unreadable ({exc}): the original CireilClaw treats it as no migrations applied; {fix}",
            )
        ]
    applied = data.get("applied") if isinstance(data, dict) else None
    if not isinstance(applied, list):
        return [
            _root_issue(
                root,
                MIGRATIONS_FILE,
                'has no "applied" list: the original CireilClaw treats it as no migrations applied; ' + fix,
            )
        ]
    pending = [m for m in MIGRATION_IDS if m not in applied]
    if not pending:
        return []
    return [
        _root_issue(
            root,
            MIGRATIONS_FILE,
            f"{len(pending)} migration(s) not applied ({', '.join(pending)}): the original CireilClaw asks at "
            "startup to run them before it starts"
            + (
                "; 20260406000000_engine_providers would rewrite a modern engine.toml into a placeholder"
                if "20260406000000_engine_providers" in pending
                else ""
            ),
        )
    ]


def _agent_warnings(agent: Path) -> list[ConfigIssue]:
    out: list[ConfigIssue] = []
    discord = agent / DISCORD_FILE
    if not discord.exists():
        out.append(
            ConfigIssue(
                DISCORD_FILE,
                None,
                "missing: `cireilclaw run` starts Discord for every agent and refuses to start without it "
                '(token = "...", ownerId = "..."); `cireilclaw tui` does not need it',
                severity="warning",
            )
        )
    else:
        out += _discord_warnings(agent)
    out += _tools_warnings(agent)
    return out


def _discord_warnings(agent: Path) -> list[ConfigIssue]:
    from ..base import params
    from ..config.checker import Checker, toml_repr
    from ..config.tomlsource import TomlSyntaxError, read_toml
    from .unhonoured import DISCORD_KEYS

    try:
        source = read_toml(agent, DISCORD_FILE)
    except TomlSyntaxError as exc:
        message = f"the original CireilClaw cannot read it: {exc.issue.message}"
        return [ConfigIssue(DISCORD_FILE, exc.issue.line, message, severity="warning")]
    if source is None:
        return []
    check = Checker(source, severity="warning", prefix="the original CireilClaw refuses to start: ")
    check.unknown(source.data, DISCORD_KEYS)
    if "token" not in source.data:
        check.fail((), "'token' is required")
    else:
        check.value(("token",), source.data["token"], params.String(min_length=1))
    owner = source.data.get("ownerId")
    if owner is None:
        check.fail((), "'ownerId' is required")
    elif not isinstance(owner, str) or not any(c.isdigit() for c in owner):
        check.fail(("ownerId",), f"'ownerId' must be a string holding the owner's user id, not {toml_repr(owner)}")
    return check.issues


def _tools_warnings(agent: Path) -> list[ConfigIssue]:
    from ..config.tomlsource import TomlSource, TomlSyntaxError

    try:
        text = safefs.read_host_file(agent / "config" / "tools.toml").decode("utf-8")
        source = TomlSource.parse("config/tools.toml", text)
    except (OSError, UnicodeDecodeError, TomlSyntaxError):
        return []  # cireil's own check reports it as an error
    out = [
        source.issue(
            (name,),
            f"'{name}' is a cireil tool the original CireilClaw does not have: its turns fail on any tools.toml "
            "naming it, even as false",
            severity="warning",
        )
        for name in CIREIL_ONLY_TOOLS
        if name in source.data
    ]
    if source.data.get("exec") is True:
        out.append(
            source.issue(
                ("exec",),
                "the original CireilClaw refuses 'exec = true'; write it as an [exec] table with enabled = true",
                severity="warning",
            )
        )
    return out
