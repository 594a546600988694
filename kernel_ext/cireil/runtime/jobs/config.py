"""config/cron.toml jobs as cireil runs them (upstream-formats §3.4), read from the checked file.

The file is checked against the original's strict schema (cron_schema; original/unhonoured.py reports the
same problems as load warnings), and a file that passed it becomes jobs. A file with any problem runs no
job at all (as the original, whose scheduler stops on a parse error), and load says so at the file.
A job the original accepts but cireil cannot schedule (an `every` past MAX_EVERY_S, an `at` outside the
dates Python can hold) is the job's own problem: it is reported at its line and left out, the others run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..base import params
from ..base.errors import ConfigIssue
from ..config.checker import label
from ..config.tomlsource import TomlSyntaxError, read_toml
from ..files.layout import CRON_FILE
from .cronexpr import CronError, CronExpr
from .schema import SECONDS, Report

# The longest `every` (and heartbeat `interval`) cireil schedules: a century, far below where adding it to
# today's date overflows Python's datetime (year 9999); the original's schema has no upper bound.
MAX_EVERY_S = 100 * 365 * 24 * 3600
MAX_JOBS = 1000  # jobs of cron.toml cireil arms; the rest are reported at their line and left out


class ScheduleRange(ValueError):
    """A schedule the original accepts that cireil cannot hold: only its own job is left out."""


def every_problem(seconds: int, what: str = "every") -> str | None:
    """Why cireil cannot wait `seconds` between runs, or None."""
    if seconds > MAX_EVERY_S:
        shown = str(seconds) if seconds < 10**30 else "a number of more than 30 digits"
        return f"{what} = {shown} seconds is more than cireil schedules (at most {MAX_EVERY_S}, a century)"
    return None


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
    if len(raw) > 64:  # an ISO date is about 30 characters; fromisoformat need not see a megabyte
        raise ValueError("too long for a date")
    value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    try:
        if value.tzinfo is None:
            if "T" not in raw and " " not in raw and ":" not in raw:
                value = value.replace(tzinfo=UTC)
            else:
                value = value.astimezone()
        # held in UTC and a day inside the range, so that comparing with (and waiting until) it never overflows
        value.astimezone(UTC) + timedelta(days=1)
        value.astimezone(UTC) - timedelta(days=1)
    except (OverflowError, OSError):
        raise ScheduleRange(f"{text.strip()!r} is outside the dates cireil can schedule (years 1 to 9999)") from None
    return value


def load_jobs(directory: Path) -> tuple[list[Job], list[str]]:
    """(the jobs, the problems): a problem of the checked schema runs no job at all; a schedule cireil
    cannot hold leaves out that job alone (the others run)."""
    jobs, problems, left_out = _load(directory)
    return jobs, problems + [str(i) for i in left_out]


def schedule_issues(directory: Path) -> list[ConfigIssue]:
    """The jobs cireil leaves out on their own, as warnings at their lines (dry-run and load show them);
    the file's schema problems are original/unhonoured.py's to report."""
    return _load(directory)[2]


def _load(directory: Path) -> tuple[list[Job], list[str], list[ConfigIssue]]:
    try:
        source = read_toml(directory, CRON_FILE)
    except (TomlSyntaxError, OSError) as exc:
        return [], [str(exc)], []
    if source is None:
        return [], [], []
    report = Report(source)
    cron_schema(report)
    if report.out:
        return [], [str(i) for i in report.out], []
    jobs: list[Job] = []
    left_out: list[ConfigIssue] = []
    seen: dict[str, int] = {}
    listed = source.data.get("jobs", [])
    if len(listed) > MAX_JOBS:  # each is armed (a cron search) at every re-read, on the loop the agent runs on
        message = f"{len(listed) - MAX_JOBS} jobs after the first {MAX_JOBS} do not run: cireil runs at most {MAX_JOBS}"
        left_out.append(ConfigIssue(CRON_FILE, source.line_of("jobs", MAX_JOBS), message, severity="warning"))
    for index, raw in enumerate(listed[:MAX_JOBS]):
        schedule = raw["schedule"]
        kind = next(iter(schedule))
        line = source.line_of("jobs", index)
        problem = every_problem(schedule["every"]) if kind == "every" else None
        job = None
        if problem is None:
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
            except (CronError, ValueError, OverflowError) as exc:
                problem = str(exc)
        if job is None:
            message = f"job {_id(raw['id'])}: {problem}; this job does not run (the others do): {SMALLER}"
            at = source.line_of("jobs", index, "schedule")
            left_out.append(ConfigIssue(CRON_FILE, at, message, severity="warning"))
            continue
        if job.id in seen:  # a later job with the same id replaces the earlier one's timer, as the original
            jobs[seen[job.id]] = job
        else:
            seen[job.id] = len(jobs)
            jobs.append(job)
    return jobs, [], left_out


SMALLER = "give it a shorter interval or a nearer date"


def _id(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "…")


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
        except ScheduleRange:
            pass  # a date the original reads: load_jobs leaves out this one job
        except ValueError:
            report.refuse((*where, "schedule"), f"'at' {value!r} is not a date cireil can read (use ISO 8601)")
