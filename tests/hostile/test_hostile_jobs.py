"""Hand-edited cron.toml and heartbeat.toml: one bad line is reported at its line and stops only its own job.

Cron expressions with digits that are not ASCII (`²`, `٣`, fullwidth) or with thousands of digits are
refused with FILE:LINE instead of a traceback at dry-run and load; a job whose schedule is beyond the dates
Python holds (a huge `every`, an `at` in year 9999 at -14:00) is left out alone while the others run.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest

import cireil
from cireil.runtime.agent_config import dry_run
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.jobs.config import MAX_EVERY_S, load_jobs
from cireil.runtime.jobs.cronexpr import CronError, CronExpr
from cireil.runtime.jobs.job_runner import JobRunner
from conftest import make_agent


def cron_job(job_id: str, schedule: str) -> str:
    return f'[[jobs]]\nid = "{job_id}"\nprompt = "Do it."\nschedule = {schedule}\ntarget = "internal:x"\n\n'


UNREADABLE = [
    "² * * * *",  # str.isdigit() says yes, int() says no
    "٣ * * * *",  # int() reads it as 3
    "０ ０ * * *",  # fullwidth zeros
    "0 0 * * 1#²",
    "*/٣ * * * *",
    "0 0 1-３ * *",
    "0 " + "9" * 5000 + " * * *",  # int() refuses more than 4300 digits
    "0 0 * * " + "1," * 2000 + "1",  # a very long expression
]


@pytest.mark.parametrize("expr", UNREADABLE)
def test_an_unreadable_cron_expression_is_a_cron_error(expr):
    with pytest.raises(CronError):
        CronExpr.parse(expr)


@pytest.mark.parametrize("expr", UNREADABLE)
def test_dry_run_and_load_name_the_line_of_an_unreadable_expression(tmp_path, expr):
    agent_dir = make_agent(tmp_path)
    (agent_dir / "config" / "cron.toml").write_text(
        cron_job("ok", "{ every = 3600 }") + cron_job("bad", f'{{ cron = "{expr}" }}')
    )
    report = dry_run(agent_dir)
    shown = [str(i) for i in report.issues]
    assert any(line.startswith("config/cron.toml:10:") for line in shown), shown
    assert all("Traceback" not in line and len(line) < 400 for line in shown)
    agent = cireil.load(agent_dir)  # loads; the file's problem is a warning
    try:
        RUNTIME.run(agent.jobs.aclose())
        assert any("config/cron.toml:10" in str(w) for w in agent.warnings)
    finally:
        agent.close()


def test_a_number_of_thousands_of_digits_is_a_toml_error_at_its_line(tmp_path):
    agent_dir = make_agent(tmp_path)
    (agent_dir / "config" / "cron.toml").write_text(cron_job("ok", "{ every = " + "9" * 5000 + " }"))
    jobs, problems = load_jobs(agent_dir)
    assert jobs == [] and problems and problems[0].startswith("config/cron.toml:4: invalid TOML: a number too long")
    shown = [str(i) for i in dry_run(agent_dir).issues]
    assert any(line.startswith("config/cron.toml:4:") for line in shown), shown


HUGE = [
    "{ every = 9223372036854775807 }",
    "{ every = 1000000000000000000 }",
    f"{{ every = {MAX_EVERY_S + 1} }}",
    '{ at = "9999-12-31T23:59:59-14:00" }',
    '{ at = "0001-01-01T00:00:00+14:00" }',
]


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.parametrize("schedule", HUGE)
def test_one_job_past_the_dates_python_holds_stops_only_itself(tmp_path, schedule):
    agent_dir = make_agent(tmp_path)
    text = (
        cron_job("first", "{ every = 3600 }") + cron_job("huge", schedule) + cron_job("last", '{ cron = "0 * * * *" }')
    )
    (agent_dir / "config" / "cron.toml").write_text(text)
    jobs, problems = load_jobs(agent_dir)
    assert [j.id for j in jobs] == ["first", "last"]
    assert len(problems) == 1 and problems[0].startswith("config/cron.toml:10:") and "'huge'" in problems[0]
    shown = [str(i) for i in dry_run(agent_dir).issues]
    assert any(line.startswith("config/cron.toml:10:") and "'huge'" in line for line in shown), shown
    agent = cireil.load(agent_dir)
    try:
        RUNTIME.run(agent.jobs.aclose())
        now = datetime(2026, 1, 9, 8, 0).astimezone()
        runner = JobRunner(agent.engine, Clock(now), manual=True)
        RUNTIME.run(runner.tick())  # the scheduler's round: raised OverflowError and armed nothing before
        assert runner.next["first"] == now + timedelta(seconds=3600)
        assert runner.next["last"] is not None and "huge" not in runner.next
        assert any("'huge'" in p for p in runner.problems)
    finally:
        agent.close()


def test_a_heartbeat_interval_past_the_dates_python_holds_is_reported_at_its_line(tmp_path):
    agent_dir = make_agent(tmp_path)
    (agent_dir / "config" / "heartbeat.toml").write_text("enabled = true\n\ninterval = 9223372036854775807\n")
    (agent_dir / "config" / "cron.toml").write_text(cron_job("first", "{ every = 3600 }"))
    shown = [str(i) for i in dry_run(agent_dir).issues]
    assert any(line.startswith("config/heartbeat.toml:3:") for line in shown), shown
    agent = cireil.load(agent_dir)
    try:
        RUNTIME.run(agent.jobs.aclose())
        runner = JobRunner(agent.engine, Clock(datetime(2026, 1, 9, 8, 0).astimezone()), manual=True)
        RUNTIME.run(runner.tick())
        assert "first" in runner.next and "heartbeat" not in runner.next
        assert any(p.startswith("config/heartbeat.toml:3:") for p in runner.problems)
    finally:
        agent.close()


def test_a_job_that_reaches_the_end_of_time_after_a_run_is_not_rearmed(tmp_path):
    agent_dir = make_agent(tmp_path)
    (agent_dir / "config" / "cron.toml").write_text(cron_job("first", f"{{ every = {MAX_EVERY_S} }}"))
    agent = cireil.load(agent_dir)
    try:
        RUNTIME.run(agent.jobs.aclose())
        runner = JobRunner(agent.engine, Clock(datetime(9950, 1, 1).astimezone()), manual=True)
        RUNTIME.run(runner.tick())  # a century after 9950 is past year 9999: not armed, not a crash
        assert "first" not in runner.next and any("'first'" in p for p in runner.problems)
    finally:
        agent.close()


@pytest.mark.parametrize("start", ["²:00", "٣:00", "０9:00", "9" * 5000 + ":00", "09:" + "0" * 5000])
def test_active_hours_with_digits_python_cannot_read_do_not_crash_a_pulse(start):
    from cireil.runtime.jobs.heartbeat import Heartbeat

    pulse = Heartbeat(enabled=True, start=start, end="17:00", timezone="UTC")
    assert pulse.active(datetime(2026, 1, 9, 8, 0).astimezone()) is True  # unreadable hours: the original runs


def test_jobs_past_the_cap_are_reported_at_their_line_and_the_first_ones_run(tmp_path):
    from cireil.runtime.jobs.config import MAX_JOBS

    agent_dir = make_agent(tmp_path)
    text = "".join(cron_job(f"j{i}", '{ cron = "0 0 * 2 1#5" }') for i in range(MAX_JOBS + 5))
    (agent_dir / "config" / "cron.toml").write_text(text)
    jobs, problems = load_jobs(agent_dir)
    assert len(jobs) == MAX_JOBS and len(problems) == 1
    assert problems[0].startswith(f"config/cron.toml:{MAX_JOBS * 6 + 1}: warning: 5 jobs after the first {MAX_JOBS}")
    agent = cireil.load(agent_dir)
    try:
        RUNTIME.run(agent.jobs.aclose())
        runner = JobRunner(agent.engine, Clock(datetime(2026, 1, 9, 8, 0).astimezone()), manual=True)
        started = time.monotonic()
        RUNTIME.run(runner.tick())  # a fifth Monday of February for each: searched month by month, not day by day
        assert time.monotonic() - started < 10.0
        assert len(runner.next) == MAX_JOBS
    finally:
        agent.close()
