"""config/cron.toml jobs (upstream-formats §3.4): croner's schedule syntax, and the runner driven by a
controllable clock against the scripted model: isolated and main executions, delivery, missed runs,
re-reading on change, %cireil jobs."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import cireil
from cireil.runtime.base.loop import RUNTIME
from cireil.runtime.jobs.cronexpr import CronError, CronExpr
from cireil.runtime.jobs.job_runner import JobRunner
from cireil.testing.scripted_llm import reply
from holderkit import Held
from turnkit import turn_agent


def local(*args: int) -> datetime:
    return datetime(*args).astimezone()  # the process's local time, as croner uses


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        ("30 7 * * 1-5", local(2026, 1, 9, 8, 0), local(2026, 1, 12, 7, 30)),  # Friday after 7:30 -> Monday
        ("*/15 * * * *", local(2026, 1, 9, 10, 7), local(2026, 1, 9, 10, 15)),
        ("0 0 L * *", local(2026, 2, 3, 0, 0), local(2026, 2, 28, 0, 0)),
        ("0 9 * * FRI#2", local(2026, 1, 1, 0, 0), local(2026, 1, 9, 9, 0)),
        ("0 9 * * 5L", local(2026, 1, 1, 0, 0), local(2026, 1, 30, 9, 0)),
        ("0 9 13 * 1", local(2026, 1, 6, 0, 0), local(2026, 1, 12, 9, 0)),  # both restricted: either matches
        ("0 0 1 JAN,jul *", local(2026, 2, 1, 0, 0), local(2026, 7, 1, 0, 0)),
        ("@hourly", local(2026, 1, 9, 10, 0, 0), local(2026, 1, 9, 11, 0)),
        ("*/20 * * * * *", local(2026, 1, 9, 10, 0, 5), local(2026, 1, 9, 10, 0, 20)),
        ("0 0 29 2 *", local(2026, 3, 1, 0, 0), local(2028, 2, 29, 0, 0)),
        ("0 12 * * 7", local(2026, 1, 9, 0, 0), local(2026, 1, 11, 12, 0)),  # 7 is Sunday too
    ],
)
def test_next_match(expr, after, expected):
    assert CronExpr.parse(expr).next_after(after) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("61 * * * *", "minute: 61 is outside 0-59"),
        ("* * *", "needs 5 fields"),
        ("0 0 * * FRI-MON", "runs backwards"),
        ("0 0 * * 1#6", "needs #1 to #5"),
        ("*/0 * * * *", "step '0'"),
        ("0 0 * FOO *", "'FOO' is not a number or a name"),
    ],
)
def test_bad_expressions_say_why(expr, message):
    with pytest.raises(CronError, match=message.replace("*", r"\*").replace("(", r"\(")):
        CronExpr.parse(expr)


# -- the runner ----------------------------------------------------------------------------------------
class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def setup(tmp_path, llm):
    """An agent with a cron.toml and a runner on a fake clock (the real loop stays out of the way)."""
    created = []

    def make(cron_toml: str):
        agent_dir = turn_agent(tmp_path, llm.base_url)
        (agent_dir / "config" / "cron.toml").write_text(cron_toml)
        agent = cireil.load(agent_dir)
        created.append(agent)
        RUNTIME.run(agent.jobs.aclose())  # stop the real-time loop started at load
        clock = Clock(local(2026, 1, 9, 8, 0))
        agent.jobs = runner = JobRunner(agent.engine, clock, manual=True)
        runner.reload()
        return agent, runner, clock

    yield make
    for agent in created:
        agent.close()


def tick(runner: JobRunner) -> list:
    async def go():
        started = await runner.tick()
        for task in started:
            await task
        return started

    return RUNTIME.run(go())


EVERY = """\
[[jobs]]
id = "hourly-sync"
prompt = "Check the inbox."
schedule = { every = 3600 }
target = "internal:inbox"
"""


def test_every_runs_isolated_and_announces_to_its_target(setup, llm):
    agent, runner, clock = setup(EVERY)
    assert runner.next["hourly-sync"] == clock.now + timedelta(seconds=3600)  # first run one interval after start
    clock.advance(3599)
    assert tick(runner) == [] and llm.requests == []
    llm.script(reply.tool_calls(("respond", {"content": "Inbox is empty."})))
    clock.advance(1)
    assert len(tick(runner)) == 1
    body = llm.requests[0].body
    assert "This is an internal cron session (job ID: testagent:hourly-sync)" in body["messages"][0]["content"]
    assert body["messages"][-2]["content"][0]["text"] == "Check the inbox."
    inbox = agent.session_for("internal:inbox")
    assert inbox.history[-1]["content"][0]["text"] == "Inbox is empty."
    assert inbox.history[-1]["deliveredFrom"] == "cron:testagent:hourly-sync"
    assert not agent.store.exists("cron:testagent:hourly-sync")  # isolated runs are never saved
    assert runner.next["hourly-sync"] == clock.now + timedelta(seconds=3600)  # every s after the run
    assert runner.last["hourly-sync"].text == "Inbox is empty."


def test_a_missed_interval_runs_once_not_once_per_missed_tick(setup, llm):
    _agent, runner, clock = setup(EVERY)
    clock.advance(3600 * 5)  # the kernel slept through five runs
    llm.script(reply.tool_calls(("respond", {"content": "ok"})))
    assert len(tick(runner)) == 1
    assert tick(runner) == [] and len(llm.requests) == 1


def test_at_in_the_past_is_skipped_and_in_the_future_runs_once(setup, llm):
    text = (
        '[[jobs]]\nid = "old"\nprompt = "p"\nschedule = { at = "2025-01-01T00:00:00Z" }\n'
        '[[jobs]]\nid = "soon"\nprompt = "p"\nschedule = { at = "2026-01-09T09:00:00" }\ndelivery = "none"\n'
    )
    _agent, runner, clock = setup(text)
    assert runner.next == {"old": None, "soon": local(2026, 1, 9, 9, 0)}
    llm.script(reply.tool_calls(("respond", {"content": "done"})))
    clock.advance(3600)
    assert len(tick(runner)) == 1 and runner.next["soon"] is None
    clock.advance(86400)
    assert tick(runner) == []


def test_cron_schedule_and_an_engine_error_is_delivered(setup, llm):
    text = '[[jobs]]\nid = "brief"\nprompt = "Plan."\nschedule = { cron = "30 7 * * 1-5" }\ntarget = "internal:me"\n'
    agent, runner, clock = setup(text)
    assert runner.next["brief"] == local(2026, 1, 12, 7, 30)  # Friday 08:00 -> Monday 07:30
    llm.script(*[reply.error(400, "model down")] * 5)
    clock.now = local(2026, 1, 12, 7, 30)
    tick(runner)
    delivered = agent.session_for("internal:me").history[-1]["content"][0]["text"]
    assert delivered.startswith("⚠️ Engine error:") and "model down" in delivered
    assert runner.next["brief"] == local(2026, 1, 13, 7, 30)


def test_an_engine_error_that_is_no_provider_error_is_delivered_with_configured_secrets_masked(setup, monkeypatch):
    # provider errors are masked where they are made; any other failure's text reaches the target session too
    from cireil.runtime.base.secrets import SECRETS

    secret = "sk-cron-secret-0123456789"
    SECRETS.add(secret)
    text = '[[jobs]]\nid = "brief"\nprompt = "Plan."\nschedule = { every = 60 }\ntarget = "internal:me"\n'
    agent, runner, clock = setup(text)

    async def failing(*args, **kwargs):
        raise RuntimeError(f"could not reach https://api.example/v1?key={secret}: {secret}")

    monkeypatch.setattr(agent.engine, "run_turn", failing)
    clock.advance(60)
    tick(runner)
    delivered = agent.session_for("internal:me").history[-1]["content"][0]["text"]
    assert delivered.startswith("⚠️ Engine error:") and "could not reach" in delivered
    assert secret not in delivered


MAIN = """\
[[jobs]]
id = "tidy"
prompt = "Tidy up."
schedule = { every = 60 }
execution = "main"
target = "internal:desk"
"""


def test_main_execution_runs_in_the_target_session_and_is_saved(setup, llm):
    text = MAIN
    agent, runner, clock = setup(text)
    llm.script(reply.tool_calls(("respond", {"content": "Tidied."})))
    clock.advance(60)
    tick(runner)
    desk = agent.store.get("internal:desk")
    assert desk is not None and [m["role"] for m in desk.history] == ["user", "assistant", "toolResponse"]
    assert desk.history[0]["content"][0]["text"] == "Tidy up."


def test_main_execution_is_skipped_while_another_turn_runs(setup, llm):
    text = MAIN
    agent, runner, clock = setup(text)
    notices = []
    agent.engine.on_background = lambda event: notices.append(event)

    async def busy_round():
        async with agent.engine.exclusive():
            clock.advance(60)
            for task in await runner.tick():
                await task

    RUNTIME.run(busy_round())
    assert llm.requests == []
    assert any("busy with another turn; skipped" in e.get("text", "") for e in notices)


def test_webhook_delivery_posts_the_result(setup, llm):
    received: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        text = '[[jobs]]\nid = "w"\nprompt = "p"\nschedule = { every = 60 }\ndelivery = "webhook"\n'
        _agent, runner, clock = setup(text + f'webhookUrl = "{url}"\n')
        llm.script(reply.tool_calls(("respond", {"content": "for the hook"})))
        clock.advance(60)
        tick(runner)
        assert received == [{"agentSlug": "testagent", "content": "for the hook", "jobId": "w"}]
    finally:
        server.shutdown()
        server.server_close()


def test_an_edit_of_cron_toml_rearms_the_jobs(setup, llm):
    agent, runner, clock = setup(EVERY)
    (agent.directory / "config" / "cron.toml").write_text(EVERY.replace("3600", "120").replace("hourly-sync", "quick"))
    clock.advance(10)
    tick(runner)
    assert [j.id for j in runner.jobs] == ["quick"]
    assert runner.next == {"quick": clock.now + timedelta(seconds=120)}


def test_a_broken_file_runs_no_job_and_says_so_at_load(tmp_path, llm):
    agent_dir = turn_agent(tmp_path, llm.base_url)
    (agent_dir / "config" / "cron.toml").write_text(
        EVERY + '[[jobs]]\nid = "bad"\nprompt = "p"\nschedule = { cron = "61 * * * *" }\n'
    )
    agent = cireil.load(agent_dir)
    try:
        shown = [str(w) for w in agent.warnings]
        assert any(
            s.startswith("config/cron.toml:9: warning: the original CireilClaw refuses this file: cron expression")
            for s in shown
        )
        assert "config/cron.toml: warning: no job of this file runs until the problems above are fixed" in shown
        runner = JobRunner(agent.engine, Clock(local(2026, 1, 9, 8, 0)), manual=True)
        runner.reload()
        assert runner.jobs == [] and runner.problems
    finally:
        agent.close()


def test_a_reload_from_another_thread_waits_for_the_file_being_read(setup, monkeypatch):
    """The loop and %cireil jobs both reload: the second caller saw the file as read and its jobs still empty
    while the first was reading it (the jobs magic said "no jobs" on a busy machine)."""
    import cireil.runtime.jobs.job_runner as job_runner

    agent, runner, _ = setup(EVERY)
    (agent.directory / "config" / "cron.toml").write_text(EVERY.replace("3600", "7200"))
    reading, go_on = threading.Event(), threading.Event()
    real = job_runner.load_jobs

    def slow_load(directory):
        reading.set()
        go_on.wait(10)
        return real(directory)

    monkeypatch.setattr(job_runner, "load_jobs", slow_load)
    first = threading.Thread(target=runner.reload)
    first.start()
    assert reading.wait(10)
    seen = []
    second = threading.Thread(target=lambda: seen.append((runner.reload(), [j.every for j in runner.jobs])))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # it waits for the read in progress
    go_on.set()
    first.join(10)
    second.join(10)
    assert seen == [(False, [7200])]


def test_the_jobs_magic_lists_and_runs_one_now(tmp_path, llm):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from magicshell import loaded, run, usage_error

    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    agent_dir = turn_agent(tmp_path, llm.base_url)
    (agent_dir / "config" / "cron.toml").write_text(EVERY)
    try:
        loaded(shell, agent_dir)
        (bundle,) = run(shell, "%cireil jobs").displayed
        assert "hourly-sync  every 3600 s  next: 20" in bundle["text/plain"]
        assert "isolated, announce to internal:inbox" in bundle["text/plain"]
        llm.script(reply.tool_calls(("respond", {"content": "Ran by hand."})))
        ran = run(shell, "%cireil jobs run hourly-sync")
        assert "cron job 'hourly-sync' ran: Ran by hand." in ran.stdout
        assert "last: " in ran.displayed[-1]["text/plain"]
        assert "no job 'nope'" in usage_error(shell, "%cireil jobs run nope")
    finally:
        if "cireil" in shell.extension_manager.loaded:
            shell.extension_manager.unload_extension("cireil")
        InteractiveShell.clear_instance()


def test_the_loop_on_the_runtime_runs_what_is_due_and_stops_with_the_agent(tmp_path, llm):
    import time

    agent_dir = turn_agent(tmp_path, llm.base_url)
    (agent_dir / "config" / "cron.toml").write_text(EVERY.replace('target = "internal:inbox"\n', 'delivery = "none"\n'))
    agent = cireil.load(agent_dir)
    try:
        assert agent.jobs.started  # load started it because cron.toml exists
        RUNTIME.run(agent.jobs.aclose())
        clock = Clock(local(2026, 1, 9, 8, 0))
        runner = agent.jobs = JobRunner(agent.engine, clock)
        runner.reload()
        clock.advance(3600)  # due: the loop's first round runs it
        llm.script(reply.tool_calls(("respond", {"content": "looped"})))
        runner.start()
        deadline = time.monotonic() + 20
        while "hourly-sync" not in runner.last and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runner.last["hourly-sync"].text == "looped"
    finally:
        agent.close()
    assert not agent.jobs.started and len(llm.requests) == 1


# -- the heartbeat -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("start", "end", "zone", "hour", "expected"),
    [
        ("08:00", "22:00", "UTC", 12, True),
        ("08:00", "22:00", "UTC", 22, False),
        ("22:00", "06:00", "UTC", 23, True),  # a window across midnight
        ("22:00", "06:00", "UTC", 7, False),
        ("18:00", "00:00", "UTC", 23, True),  # "00:00" ends at the end of the day
        ("08:00", "09:00", "Europe/Berlin", 7, True),  # 07:xx UTC is 08:xx in Berlin (winter)
        ("08:00", "09:00", "Not/AZone", 3, True),  # an unknown zone lets the pulse run
    ],
)
def test_active_hours(start, end, zone, hour, expected):
    from datetime import UTC

    from cireil.runtime.jobs.heartbeat import Heartbeat

    beat = Heartbeat(enabled=True, start=start, end=end, timezone=zone)
    assert beat.active(datetime(2026, 1, 9, hour, 30, tzinfo=UTC)) is expected


BEAT = 'enabled = true\ninterval = 600\ntarget = "internal:desk"\n'


@pytest.fixture
def beat(setup, llm):
    def make(text: str = BEAT, tasks: str = "Water the plants.\n"):
        agent, runner, clock = setup("")
        (agent.directory / "tasks" / "HEARTBEAT.md").write_text(tasks)
        (agent.directory / "config" / "heartbeat.toml").write_text(text)
        events: list[dict] = []
        agent.engine.on_background = events.append
        runner.reload()
        return agent, runner, clock, events

    return make


def test_a_pulse_runs_in_its_target_without_keeping_its_prompt(beat, llm):
    agent, runner, clock, events = beat()
    assert runner.next["heartbeat"] == clock.now + timedelta(seconds=600)  # one interval after the start
    llm.script(reply.tool_calls(("respond", {"content": "Plants need water!"})))
    clock.advance(600)
    assert len(tick(runner)) == 1
    assert "Heartbeat: read /tasks/HEARTBEAT.md" in llm.requests[0].body["messages"][-2]["content"][0]["text"]
    desk = agent.store.get("internal:desk")
    assert [m["role"] for m in desk.history] == ["assistant", "toolResponse"]  # the prompt is not kept
    assert desk.last_activity is None
    assert [e["content"] for e in events if e.get("type") == "respond"] == ["Plants need water!"]  # an alert shows
    assert runner.next["heartbeat"] == clock.now + timedelta(seconds=600)


@pytest.mark.parametrize(
    ("visibility", "answer", "shown"),
    [
        ("", "HEARTBEAT_OK", []),  # by default an all-clear stays quiet
        ("[visibility]\nshowOk = true\nshowAlerts = false\n", "HEARTBEAT_OK", ["HEARTBEAT_OK"]),
        ("[visibility]\nshowAlerts = false\n", "Fire!", []),
    ],
)
def test_what_a_pulse_shows_follows_visibility(beat, llm, visibility, answer, shown):
    _agent, runner, clock, events = beat(BEAT + visibility)
    llm.script(reply.tool_calls(("respond", {"content": answer})))
    clock.advance(600)
    tick(runner)
    assert [e["content"] for e in events if e.get("type") == "respond"] == shown
    assert runner.last["heartbeat"].text == answer


@pytest.mark.parametrize(
    ("text", "tasks", "why"),
    [
        (BEAT, "  \n", "tasks/HEARTBEAT.md is missing or empty"),
        (BEAT + '[activeHours]\nstart = "00:00"\nend = "00:01"\ntimezone = "UTC"\n', "x", "outside the active hours"),
    ],
)
def test_a_pulse_is_skipped_and_says_why(beat, llm, text, tasks, why):
    _agent, runner, clock, _events = beat(text, tasks)
    clock.now = datetime(2026, 1, 9, 12, 0).astimezone() + timedelta(seconds=600)
    runner.next["heartbeat"] = clock.now
    tick(runner)
    assert llm.requests == [] and why in runner.last["heartbeat"].text
    assert runner.next["heartbeat"] == clock.now + timedelta(seconds=600)


def test_a_disabled_heartbeat_never_pulses_and_heartbeat_warnings_at_load(beat, llm):
    agent, runner, _clock, _events = beat(BEAT.replace("true", "false"))
    assert "heartbeat" not in runner.next
    (agent.directory / "config" / "heartbeat.toml").write_text(BEAT)
    (agent.directory / "tasks" / "HEARTBEAT.md").write_text("")
    shown = [str(w) for w in cireil.dry_run(agent.directory).warnings]
    assert "config/heartbeat.toml:1: warning: pulses are skipped until tasks/HEARTBEAT.md has content" in "\n".join(
        shown
    )


def test_run_now_pulses_and_leaves_the_schedule(beat, llm):
    _agent, runner, _clock, _events = beat()
    planned = runner.next["heartbeat"]
    llm.script(reply.tool_calls(("respond", {"content": "Checked."})))

    async def go():
        await runner.run_now("heartbeat")

    RUNTIME.run(go())
    assert runner.last["heartbeat"].text == "Checked." and runner.next["heartbeat"] == planned


def test_while_the_original_runs_the_jobs_are_left_to_it_and_taken_up_when_it_stops(setup, llm):
    agent, runner, clock = setup(EVERY)
    notices: list[str] = []
    agent.engine.on_background = lambda e: e.get("type") == "notice" and notices.append(e["text"])
    say_something = agent.store.open_session("notebook:x")  # sessions.db exists and is in WAL mode
    agent.store.save_state(say_something)
    original = Held(agent.directory / "sessions.db")
    try:
        clock.advance(3600)
        assert tick(runner) == [] and llm.requests == []  # due, but the original runs it: not twice
        assert runner.next["hourly-sync"] == clock.now + timedelta(seconds=3600)  # moved on as if it ran
        clock.advance(3600)
        assert tick(runner) == []
        said = [n for n in notices if "leaves them to it" in n]
        assert len(said) == 1 and f"pid {original.proc.pid}" in said[0] and "%cireil jobs run ID" in said[0]
    finally:
        original.stop()
    clock.advance(1800)
    assert tick(runner) == []  # taken up from now: a run the original may just have made is not repeated
    assert any("has stopped" in n for n in notices)
    assert runner.next["hourly-sync"] == clock.now + timedelta(seconds=3600)
    llm.script(reply.tool_calls(("respond", {"content": "mine now"})))
    clock.advance(3600)
    assert len(tick(runner)) == 1
