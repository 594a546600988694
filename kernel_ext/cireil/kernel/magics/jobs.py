"""`%cireil jobs [run ID]`: config/cron.toml's jobs and the heartbeat with their next run, and one run now.

The schedule tool's one-shot jobs (kept in sessions.db) are listed after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.display import display

from ...render.html import ERROR, FG_DIM, LINED, MONO, esc, frame, table
from ..views.base import View

if TYPE_CHECKING:
    from ...runtime.agent import Agent


def _when(value: object) -> str:
    from datetime import datetime

    return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if isinstance(value, datetime) else "—"


@dataclass
class JobsView(View):
    rows: list[tuple[str, str, str, str, str]]  # id, schedule, next run, how, last result
    problems: list[str] = field(default_factory=list)
    one_shot: list[tuple[str, str]] = field(default_factory=list)  # schedule tool: id, at
    notes: list[str] = field(default_factory=list)  # said above the list, not problems of the file

    def text(self) -> str:
        lines = list(self.notes)
        lines += [f"config/cron.toml: {p}" if not p.startswith("config/") else p for p in self.problems]
        if not self.rows and not self.problems:
            lines.append("config/cron.toml: no jobs")
        for job_id, schedule, next_run, how, last in self.rows:
            lines.append(f"{job_id}  {schedule}  next: {next_run}  {how}" + (f"  last: {last}" if last else ""))
        lines += [f"{job_id}  (schedule tool) at {at}" for job_id, at in self.one_shot]
        return "\n".join(lines)

    def html(self) -> str:
        problems = "".join(f'<div style="color:{FG_DIM}">{esc(n)}</div>' for n in self.notes)
        problems += "".join(f'<div style="color:{ERROR}">{esc(p)}</div>' for p in self.problems)
        mono = f"font-family:{MONO}"
        rows = [[(esc(r[0]), mono), *(esc(v) for v in r[1:])] for r in self.rows]
        rows += [
            [(esc(i), mono), f"at {esc(at)}", esc(at), ("schedule tool", f"color:{FG_DIM}"), ""]
            for i, at in self.one_shot
        ]
        head = ("job", "schedule", "next run", "runs", "last result")
        return frame("jobs", problems + table(rows, head=head, cell=LINED), title="jobs")


def jobs_view(agent: Agent) -> JobsView:
    runner = agent.jobs
    runner.reload()
    rows = []
    for job in runner.jobs:
        how = f"{job.execution}, {job.delivery} to {job.target}" + ("" if job.enabled else " (disabled)")
        next_run = "running" if job.id in runner.running else _when(runner.next.get(job.id))
        last = runner.last.get(job.id)
        rows.append((job.id, job.schedule_text, next_run, how, f"{_when(last.at)}: {last.text[:80]}" if last else ""))
    heartbeat = runner.heartbeat
    if heartbeat is not None:
        how = f"in {heartbeat.target}, {heartbeat.hours_text}" + ("" if heartbeat.enabled else " (disabled)")
        next_run = "running" if "heartbeat" in runner.running else _when(runner.next.get("heartbeat"))
        last = runner.last.get("heartbeat")
        last_text = f"{_when(last.at)}: {last.text[:80]}" if last else ""
        rows.append(("heartbeat", f"every {heartbeat.interval} s", next_run, how, last_text))
    one_shot = [(j["id"], j.get("schedule", {}).get("at", "?")) for j in agent.engine.scheduler.pending()]
    pids = agent.store.holders() if agent.store is not None else []
    notes = []
    if pids:  # the runner fires none of them while the original runs them (jobs/job_runner.py)
        notes.append(
            f"the original runtime runs these jobs while it runs (pid {', '.join(map(str, pids))}); cireil fires "
            "none of them meanwhile; %cireil jobs run ID runs one here now"
        )
    return JobsView(rows, list(runner.problems), one_shot, notes)


def jobs_command(agent: Agent, job_id: str | None = None) -> None:
    """`%cireil jobs` (job_id None): the list; `%cireil jobs run ID`: that job now, then the list."""
    agent._start_cron_jobs()  # a cron.toml written since the load starts running now
    if job_id is None:
        display(jobs_view(agent))
        return
    from ...runtime.base.loop import RUNTIME

    runner = agent.jobs
    runner.reload()
    if runner.job(job_id) is None and not (job_id == "heartbeat" and runner.heartbeat is not None):
        known = ", ".join([j.id for j in runner.jobs] + (["heartbeat"] if runner.heartbeat else [])) or "none"
        raise UsageError(f"no job '{job_id}' in config/cron.toml (jobs: {known})")

    async def run_one() -> None:
        await runner.run_now(job_id)

    RUNTIME.run(run_one())
    record = runner.last[job_id]
    print(f"cron job '{job_id}' ran: {record.text or '(no respond)'}")
    display(jobs_view(agent))
