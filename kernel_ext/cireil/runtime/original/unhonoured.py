"""Files and keys the original CireilClaw reads that cireil does not act on: each said once, at load and in
dry-run, with its file, its line and what cireil does instead. Nothing a user wrote is dropped in silence.

Each file is also checked against the original's strict schema (upstream-formats §3.4–3.7), so a file
that would break the original is reported even though cireil does not use it. These are warnings:
cireil runs without them, and an agent shared with the original keeps working in cireil. The schemas of
cron.toml and heartbeat.toml belong to the job runner, which runs only what passes them (jobs/config.py,
jobs/heartbeat.py); here their problems are reported with the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..base import params
from ..base.errors import ConfigIssue
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_toml
from ..files.layout import CRON_FILE, HEARTBEAT_FILE, TASKS_FILE

if TYPE_CHECKING:
    from ..jobs.schema import Report

SUMMARIZATION_FILE = "config/summarization.toml"
CHANNELS_DIR = "config/channels"
DISCORD_KEYS = ("token", "ownerId", "timeout", "access", "directMessages", "trustedUsers")  # runtime_root.py too


def _read(directory: Path, rel: str) -> TomlSource | ConfigIssue | None:
    try:
        return read_toml(directory, rel)
    except TomlSyntaxError as exc:
        issue = exc.issue
        return ConfigIssue(
            issue.file, issue.line, f"the original CireilClaw cannot read it: {issue.message}", None, "warning"
        )
    except OSError as exc:
        return ConfigIssue(rel, None, f"cannot be read: {exc.strerror or exc}", severity="warning")


def unhonoured_warnings(directory: Path, *, in_root: bool = False) -> list[ConfigIssue]:
    """Everything the original would read in this agent's config/ that cireil leaves alone.

    `in_root`: the agent sits in a runtime root, where runtime_root.py already checks what makes the
    original's `run` refuse discord.toml (unreadable, token, ownerId, unknown keys)."""
    out: list[ConfigIssue] = []

    def cron(report: Report) -> None:
        _cron(report, in_root)

    def heartbeat(report: Report) -> None:
        _heartbeat(report, directory, in_root)

    for rel, check in ((CRON_FILE, cron), (HEARTBEAT_FILE, heartbeat), (SUMMARIZATION_FILE, _summarization)):
        found = _read(directory, rel)
        if isinstance(found, ConfigIssue):
            out.append(found)
        elif found is not None:
            report = _report(found)
            check(report)
            out += report.out
    out += _channels(directory, in_root)
    out += _engine(directory)
    return out


def _engine(directory: Path) -> list[ConfigIssue]:
    """Provider kinds cireil cannot speak, and openai-codex logins that a turn could not use, at their lines."""
    found = _read(directory, "config/engine.toml")
    if not isinstance(found, TomlSource):
        return []  # missing or unreadable: the engine check (dry-run, each turn) says so
    out: list[ConfigIssue] = []
    for name, table in found.data.items():
        if not isinstance(table, dict):
            continue
        kind = table.get("kind", "openai")
        if kind not in ("anthropic", "openai-codex"):
            continue
        from ..config.engine_config import SPOKEN_KINDS  # only for an agent that names such a kind: not at every load

        if kind not in SPOKEN_KINDS:
            out.append(
                found.issue(
                    (name, "kind"),
                    f"provider '{name}' has kind = \"{kind}\", which cireil does not speak yet: turns that use it "
                    "fail with a clear error (choose another provider with --provider)",
                    "warning",
                )
            )
        elif kind == "openai-codex":
            out += _codex_login(found, directory, name, table)
    return out


def _codex_login(source: TomlSource, directory: Path, name: str, table: dict) -> list[ConfigIssue]:
    """The login file of an openai-codex provider: read (never refreshed) so a turn does not find it broken."""
    from ..engine import codex_auth

    auth_id = table.get("authId", "default")
    if not isinstance(auth_id, str) or not auth_id:
        return []  # the engine check reports the key itself
    problem = codex_auth.login_problem(directory, auth_id)
    where = source.issue((name, "kind"), "")
    at = f"{where.file}:{where.line}" if where.line else where.file
    if problem is not None:
        file, line, message = problem
        return [
            ConfigIssue(
                file,
                line,
                f"{message}; turns with provider '{name}' ({at}) fail until it is there",
                severity="warning",
            )
        ]
    loose = codex_auth.permission_problem(codex_auth.login_path(directory, auth_id))
    if loose is not None:
        shown = codex_auth.shown(directory, codex_auth.login_path(directory, auth_id))
        return [ConfigIssue(shown, None, f"{loose} (the OAuth login of provider '{name}')", severity="warning")]
    return []


def _report(found: TomlSource) -> Report:
    # jobs/ loads only for an agent that has a cron.toml or heartbeat.toml: %load_ext of the others stays light
    from ..jobs.schema import Report

    return Report(found)


def _cron(report: Report, in_root: bool = False) -> None:
    from ..jobs.config import cron_schema

    cron_schema(report)
    if report.out:
        report.note((), "no job of this file runs until the problems above are fixed")
        return
    jobs = [j for j in report.source.data.get("jobs", []) if j.get("enabled", True)]
    for index, job in enumerate(report.source.data.get("jobs", [])):
        target = job.get("target", "last")
        reaches = job.get("delivery", "announce") == "announce" or job.get("execution") == "main"
        if job.get("enabled", True) and reaches and (target == "owner" or target.startswith("discord:")):
            report.note(
                ("jobs", index, "target") if "target" in job else ("jobs", index),
                f"cron job '{job['id']}' runs in cireil, but its target {target} is a Discord channel cireil does "
                "not have: the result only shows as a notice in the notebook",
            )
    if in_root and jobs:
        report.note(
            (),
            "these jobs run in cireil while the kernel lives, except while `cireilclaw run` serves this agent: "
            "then cireil leaves them to it (no job runs twice) and `%cireil jobs run ID` runs one here by hand",
        )


def _heartbeat(report: Report, directory: Path, in_root: bool) -> None:
    from ..jobs.heartbeat import heartbeat_schema, tasks_text

    heartbeat_schema(report)
    if report.out:
        report.note((), "the heartbeat does not run until the problems above are fixed")
        return
    if report.source.data.get("enabled") is not True:
        return
    if not tasks_text(directory):
        report.note(("enabled",), f"pulses are skipped until {TASKS_FILE} has content (as the original)")
    if in_root:
        report.note(
            ("enabled",),
            "the heartbeat pulses in cireil while the kernel lives, except while `cireilclaw run` serves this "
            "agent: then cireil leaves it to the original (it never pulses in both)",
        )


def _summarization(report: Report) -> None:
    data = report.source.data
    report.unknown(data, ("provider", "model"), ())
    for key in ("provider", "model"):
        report.text(data, key, ())
    report.note(
        (),
        "has no effect: the original never reads summarization.toml, and cireil neither (compaction uses the "
        "session's own provider and model)",
    )


def _channels(directory: Path, in_root: bool) -> list[ConfigIssue]:
    folder = directory / CHANNELS_DIR
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".toml")
    except OSError:
        return []
    out: list[ConfigIssue] = []
    for path in files:
        rel = f"{CHANNELS_DIR}/{path.name}"
        found = _read(directory, rel)
        if isinstance(found, ConfigIssue):
            if not (in_root and path.stem == "discord"):
                out.append(found)
            continue
        if found is None:
            continue
        report = _report(found)
        if path.stem == "discord":
            _discord(report, in_root)
            report.note((), "has no effect here: cireil has no Discord channel (the original's `run` uses it)")
        elif path.stem == "matrix":
            report.unknown(found.data, (), ())
            report.note((), "has no effect: neither the original nor cireil has a Matrix channel")
        else:
            report.note((), f"has no effect: the original has no '{path.stem}' channel (it would say unimplemented)")
        out += report.out
    return out


def _discord(report: Report, in_root: bool) -> None:
    data = report.source.data
    if not in_root:
        report.unknown(data, DISCORD_KEYS, ())
        report.text(data, "token", (), required=True)
        owner = data.get("ownerId")
        if not isinstance(owner, str) or not any(c.isdigit() for c in owner):
            report.refuse(("ownerId",) if "ownerId" in data else (), "'ownerId' must be a string holding a user id")
    if "timeout" in data:
        report.value(
            ("timeout",), data["timeout"], params.Integer(minimum=1, description="a whole number of milliseconds")
        )
    for key, modes in (
        ("access", ("disabled", "allowlist", "denylist")),
        ("directMessages", ("owner", "public", "allowlist", "denylist")),
    ):
        table = data.get(key)
        if table is None:
            continue
        if not isinstance(table, dict):
            report.refuse((key,), f"'{key}' must be a table {{mode, users}}")
            continue
        report.unknown(table, ("mode", "users"), (key,))
        report.choice(table, "mode", (key,), modes)
        users = table.get("users", [])
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            report.refuse((key, "users"), "'users' must be an array of user id strings")
    trusted = data.get("trustedUsers", [])
    if not isinstance(trusted, list) or not all(
        isinstance(t, dict) and set(t) <= {"ids", "allowedCommands"} for t in trusted
    ):
        report.refuse(("trustedUsers",), "'trustedUsers' must be an array of {ids = [...], allowedCommands = [...]}")
