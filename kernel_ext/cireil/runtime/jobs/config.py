"""config/cron.toml jobs as cireil runs them (upstream-formats §3.4), read from the checked file.

The file is checked against the original's strict schema (cron_schema; original/unhonoured.py reports the
same problems as load warnings), and a file that passed it becomes jobs. A file with any problem runs no
job at all (as the original, whose scheduler stops on a parse error), and load says so at the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..base import params
from ..config.checker import label
from ..config.tomlsource import TomlSyntaxError, read_toml
from .cronexpr import CronError, CronExpr
from .schema import SECONDS, Report

CRON_FILE = "config/cron.toml"
_JOB_KEYS = (
    "id",
    "prompt",
    "schedule",
    "enabled",
    "execution",
    "delivery",
    "target",
    "model",
    "provider",
    "webhookUrl",
)


@dataclass(frozen=True)
class Job:
    id: str
    prompt: str
    kind: str  # every | cron | at
    every: int | None = None
    cron: CronExpr | None = None
    at: datetime | None = None
    enabled: bool = True
    execution: str = "isolated"
    delivery: str = "announce"
    target: str = "last"
    model: str | None = None
    provider: str | None = None
    webhook_url: str | None = None
    line: int | None = None

    @property
    def schedule_text(self) -> str:
        if self.kind == "every":
            return f"every {self.every} s"
        if self.kind == "cron":
            assert self.cron is not None
            return f"cron {self.cron.text}"
        assert self.at is not None
        return f"at {self.at.isoformat()}"


def parse_at(text: str) -> datetime:
    """The ISO 8601 forms a JS Date parses alike; without an offset, a date-time is local time and a bare
    date is UTC midnight (as JavaScript does)."""
    raw = text.strip()
    value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    if value.tzinfo is None:
        if "T" not in raw and " " not in raw and ":" not in raw:
            from datetime import UTC

            return value.replace(tzinfo=UTC)
        return value.astimezone()
    return value


def load_jobs(directory: Path) -> tuple[list[Job], list[str]]:
    """(the jobs, why the file runs none): any problem of the checked schema, or an unreadable schedule."""
    try:
        source = read_toml(directory, CRON_FILE)
    except (TomlSyntaxError, OSError) as exc:
        return [], [str(exc)]
    if source is None:
        return [], []
    report = Report(source)
    cron_schema(report)
    problems = [str(i) for i in report.out]
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(source.data.get("jobs", []) if not problems else []):
        schedule = raw["schedule"]
        kind = next(iter(schedule))
        line = source.line_of("jobs", index)
        try:
            job = Job(
                id=raw["id"],
                prompt=raw["prompt"],
                kind=kind,
                every=schedule["every"] if kind == "every" else None,
                cron=CronExpr.parse(schedule["cron"]) if kind == "cron" else None,
                at=parse_at(schedule["at"]) if kind == "at" else None,
                enabled=raw.get("enabled", True),
                execution=raw.get("execution", "isolated"),
                delivery=raw.get("delivery", "announce"),
                target=raw.get("target", "last"),
                model=raw.get("model"),
                provider=raw.get("provider"),
                webhook_url=raw.get("webhookUrl"),
                line=line,
            )
        except (CronError, ValueError) as exc:
            problems.append(f"{CRON_FILE}:{line}: job '{raw['id']}': the schedule cannot be read: {exc}")
            continue
        if job.id in seen:  # a later job with the same id replaces the earlier one's timer, as the original
            jobs[seen[job.id]] = job
        else:
            seen[job.id] = len(jobs)
            jobs.append(job)
    if problems:
        return [], problems
    return jobs, []


def cron_schema(report: Report) -> None:
    """The original's schema of cron.toml: each problem is one it would refuse the file for."""
    data = report.source.data
    report.unknown(data, ("jobs",), ())
    jobs = data.get("jobs", [])
    if not isinstance(jobs, list):
        report.refuse(("jobs",), "'jobs' must be an array of [[jobs]] tables")
        return
    for index, job in enumerate(jobs):
        where = ("jobs", index)
        if not isinstance(job, dict):
            report.refuse(("jobs",), "each [[jobs]] entry must be a table")
            continue
        report.unknown(job, _JOB_KEYS, where)
        report.text(job, "id", where, required=True)
        report.text(job, "prompt", where, required=True)
        _schedule(report, job, where)
        report.flag(job, "enabled", where)
        report.choice(job, "execution", where, ("isolated", "main"))
        report.choice(job, "delivery", where, ("announce", "webhook", "none"))
        for key in ("target", "model", "provider", "webhookUrl"):
            report.text(job, key, where)


def _schedule(report: Report, job: dict, where: tuple) -> None:
    schedule = job.get("schedule")
    if schedule is None:
        report.refuse(where, f"'{label(*where, 'schedule')}' is required")
        return
    kinds = [k for k in ("every", "cron", "at") if isinstance(schedule, dict) and k in schedule]
    if not isinstance(schedule, dict) or len(kinds) != 1 or len(schedule) != 1:
        report.refuse(
            (*where, "schedule"), '\'schedule\' must be exactly one of {every = N}, {cron = "..."}, {at = "..."}'
        )
        return
    value = schedule[kinds[0]]
    spec = SECONDS if kinds[0] == "every" else params.String(min_length=1)
    if not report.value((*where, "schedule", kinds[0]), value, spec)[0]:
        return
    if kinds[0] == "cron":
        try:
            CronExpr.parse(value)
        except CronError as exc:
            report.refuse((*where, "schedule"), f"cron expression: {exc}")
    elif kinds[0] == "at":
        try:
            parse_at(value)
        except ValueError:
            report.refuse((*where, "schedule"), f"'at' {value!r} is not a date cireil can read (use ISO 8601)")
