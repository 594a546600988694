"""Running config/cron.toml jobs on the runtime loop while the kernel lives (upstream-formats §3.4).

As the original: `every` first fires `every` seconds after the (re)start, then `every` seconds after
each run; `cron` at its next match in local time; `at` once, skipped when already past at scheduling;
nothing is caught up for the time the kernel was not running. An edit of cron.toml re-reads the file
and re-arms every job (the original restarts its scheduler on a change). `isolated` runs in a fresh
session `cron:<slug>:<id>` that is never saved, its last `respond` is the result; `main` runs in the
target session (skipped while another turn runs) and is saved there. The result is announced to the
target, POSTed to `webhookUrl`, or dropped; an engine failure is delivered as `⚠️ Engine error: ...`.
The schedule tool's one-shot jobs (sessions.db) stay with engine/scheduler.py. The heartbeat
(heartbeat.toml, see heartbeat.py) pulses from the same loop, as job id "heartbeat" in its lists.
The Agent makes and closes the runner (Agent.jobs); the engine, a floor below, only runs the turns it
asks for, through engine/runner.py's protocol.

The clock is injectable and `tick(now)` does one round, so tests drive time instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..base.loop import RUNTIME
from ..base.secrets import mask
from ..files import safefs
from ..files.layout import CRON_FILE, HEARTBEAT_FILE
from ..sessions import messages as msgs
from ..sessions.errors import SessionError
from ..sessions.state import Session
from .config import Job, load_jobs
from .heartbeat import OK_REPLY, PROMPT, Heartbeat, load_heartbeat, tasks_text

if TYPE_CHECKING:
    from ..engine.runner import TurnRunner

WEBHOOK_TIMEOUT_S = 30.0
_MAX_SLEEP_S = 30.0  # the loop looks at the files (and the clock) at least this often
PULSE = "heartbeat"  # the heartbeat's key in next/last/running


def local_now() -> datetime:
    return datetime.now().astimezone()


def _later(now: datetime, seconds: int) -> datetime | None:
    """`seconds` after now, or None past the dates Python holds."""
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        return None


@dataclass
class RunRecord:
    at: datetime
    text: str
    ok: bool


class JobRunner:
    def __init__(self, engine: TurnRunner, clock: Callable[[], datetime] = local_now, *, manual: bool = False) -> None:
        self.engine = engine
        self.clock = clock
        self.manual = manual  # a test (or a caller with its own clock) drives tick(); start() then does nothing
        self.jobs: list[Job] = []
        self.problems: list[str] = []
        self.next: dict[str, datetime | None] = {}
        self.last: dict[str, RunRecord] = {}
        self.running: set[str] = set()
        self.heartbeat: Heartbeat | None = None
        self._fingerprint: tuple[bytes | None, bytes | None] | None = None
        self._loaded = False
        self._reloading = threading.Lock()
        self._task: asyncio.Task | None = None
        self._wanted = False  # start() asked for the loop (it begins on the runtime thread a moment later)
        self._runs: set[asyncio.Task] = set()
        self.left_to: list[int] | None = None  # pids of the running original the jobs are left to, or None

    # -- the file --------------------------------------------------------------------------------
    def _file_fingerprint(self) -> tuple[bytes | None, bytes | None]:
        out: list[bytes | None] = []
        for rel in (CRON_FILE, HEARTBEAT_FILE):
            try:
                # this runs on the runtime loop: a FIFO put there must not block every call of the agent
                data = safefs.read_host_file(self.engine.host.directory / rel)
            except FileNotFoundError:
                out.append(None)
                continue
            except OSError as exc:  # a directory, FIFO, huge file: load_jobs reports it; re-read when it changes
                out.append(f"unreadable: {exc}".encode())
                continue
            out.append(hashlib.blake2b(data, digest_size=16).digest())
        return out[0], out[1]

    def reload(self, now: datetime | None = None) -> bool:
        """Re-read cron.toml when it changed (or never was read); every job is armed again. True if re-read.

        Called from the runtime loop and from the kernel's thread (%cireil jobs): one at a time, and the file
        counts as read only once its jobs are in place, or a second caller saw no jobs while the first read."""
        with self._reloading:
            fingerprint = self._file_fingerprint()
            if self._loaded and fingerprint == self._fingerprint:
                return False
            directory = self.engine.host.directory
            jobs, problems = load_jobs(directory)
            heartbeat, heartbeat_problems = load_heartbeat(directory)
            self.jobs, self.problems, self.heartbeat = jobs, problems + heartbeat_problems, heartbeat
            self._arm(now or self.clock())
            self._loaded, self._fingerprint = True, fingerprint
            return True

    def _arm(self, now: datetime) -> None:
        """Every enabled job and the heartbeat at their first time after `now`, as after a start."""
        self.next = {}
        for job in [j for j in self.jobs if j.enabled]:
            try:
                self.next[job.id] = self._first(job, now)
            except (OverflowError, ValueError) as exc:  # one job past the dates Python holds: it alone stops
                self.jobs.remove(job)
                where = f"{CRON_FILE}:{job.line}" if job.line else CRON_FILE
                self.problems.append(f"{where}: job '{job.id}' cannot be scheduled ({exc}); the others run")
        if self.heartbeat is not None and self.heartbeat.enabled:
            at = _later(now, self.heartbeat.interval)  # one interval after the start
            if at is None:
                self.problems.append(f"{HEARTBEAT_FILE}: the interval cannot be scheduled; the heartbeat stops")
            else:
                self.next[PULSE] = at

    @staticmethod
    def _first(job: Job, now: datetime) -> datetime | None:
        if job.kind == "every":
            assert job.every is not None
            return now + timedelta(seconds=job.every)
        if job.kind == "cron":
            assert job.cron is not None
            return job.cron.next_after(now)
        assert job.at is not None
        return job.at if job.at > now else None  # past when scheduled: skipped

    @staticmethod
    def _after_run(job: Job, now: datetime) -> datetime | None:
        if job.kind == "at":
            return None
        try:
            return JobRunner._first(job, now)
        except (OverflowError, ValueError):  # past year 9999: this job has run its last
            return None

    def job(self, job_id: str) -> Job | None:
        return next((j for j in self.jobs if j.id == job_id), None)

    # -- time ------------------------------------------------------------------------------------
    def due(self, now: datetime) -> list[Job]:
        return [
            j for j in self.jobs if j.id not in self.running and (at := self.next.get(j.id)) is not None and at <= now
        ]

    def _pulse_due(self, now: datetime) -> bool:
        at = self.next.get(PULSE)
        return self.heartbeat is not None and PULSE not in self.running and at is not None and at <= now

    async def tick(self, now: datetime | None = None) -> list[asyncio.Task]:
        """One round: re-read the file if it changed, start every job that is due. Returns the started runs."""
        now = now or self.clock()
        self.reload(now)
        if self._left_to_original(now):
            return []
        started = []
        for job in self.due(now):
            self.next[job.id] = None  # re-armed when this run ends
            started.append(self._spawn(job, rearm=True))
        if self._pulse_due(now):
            self.next[PULSE] = None
            started.append(self._spawn_pulse(rearm=True))
        return started

    def _left_to_original(self, now: datetime) -> bool:
        """While the original runs this agent, its scheduler runs these same jobs: cireil fires none of them
        (each would run twice), only moves their times on as if it had; when the original stops, every job is
        armed afresh from that moment, so none it may just have run fires again here."""
        store = self.engine.host.store
        pids = store.holders() if store is not None else []
        if pids:
            if self.left_to is None:
                self._notice(
                    f"the original runtime is running this agent (pid {', '.join(map(str, pids))}) and runs its cron "
                    "jobs and heartbeat: cireil leaves them to it while it runs; run one here by hand with "
                    "%cireil jobs run ID (agent.jobs.run_now(ID))"
                )
            self.left_to = pids
            for job in self.due(now):
                self.next[job.id] = self._after_run(job, now)
            if self._pulse_due(now) and self.heartbeat is not None:
                self.next[PULSE] = _later(now, self.heartbeat.interval)
            return True
        if self.left_to is not None:
            self.left_to = None
            self._arm(now)
            self._notice("the original runtime has stopped: cireil runs this agent's cron jobs and heartbeat again")
        return False

    def _spawn_pulse(self, *, rearm: bool) -> asyncio.Task:
        self.running.add(PULSE)
        heartbeat = self.heartbeat

        async def run() -> None:
            try:
                await self.pulse()
            finally:
                self.running.discard(PULSE)
                if rearm and heartbeat is not None and self.heartbeat is heartbeat:
                    self.next[PULSE] = _later(self.clock(), heartbeat.interval)

        task = asyncio.ensure_future(run())
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)
        return task

    def _spawn(self, job: Job, *, rearm: bool) -> asyncio.Task:
        self.running.add(job.id)

        async def run() -> None:
            try:
                await self.run(job)
            finally:
                self.running.discard(job.id)
                if rearm and self.job(job.id) is job:  # not when cron.toml changed meanwhile
                    self.next[job.id] = self._after_run(job, self.clock())

        task = asyncio.ensure_future(run())
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)
        return task

    def run_now(self, job_id: str) -> asyncio.Task:
        """Start one job (or the heartbeat) at once, on the runtime loop, leaving its schedule as it was."""
        if job_id == PULSE and self.heartbeat is not None and self.job(PULSE) is None:
            return self._spawn_pulse(rearm=False)
        job = self.job(job_id)
        if job is None:
            raise KeyError(job_id)
        return self._spawn(job, rearm=False)

    # -- the loop --------------------------------------------------------------------------------
    def start(self) -> None:
        """Keep ticking on the runtime loop until stopped (or the agent closed)."""
        if self._wanted or self.manual:
            return
        self._wanted = True

        def begin() -> None:
            if self._wanted and self._task is None:  # not closed meanwhile
                self._task = asyncio.ensure_future(self._loop())

        if RUNTIME.in_loop_thread():
            begin()
        else:
            RUNTIME.loop().call_soon_threadsafe(begin)

    @property
    def started(self) -> bool:
        return self._wanted

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a scheduler bug must not end the loop silently
                self.engine.background_event({"type": "notice", "text": f"cron.toml scheduler: {exc}"})
            now = self.clock()
            upcoming = [at for at in self.next.values() if at is not None]
            wait = min([(at - now).total_seconds() for at in upcoming] + [_MAX_SLEEP_S])
            await asyncio.sleep(max(wait, 0.05))

    async def aclose(self) -> None:
        tasks = [t for t in (self._task, *self._runs) if t is not None]
        self._task, self._wanted = None, False
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- one run ---------------------------------------------------------------------------------
    def _source(self, job: Job) -> str:
        return f"cron:{self.engine.host.slug}:{job.id}"

    def _target(self, job: Job) -> str | None:
        target = job.target
        if target == "none":
            return None
        if target == "last":
            store = self.engine.host.store
            return store.last_active() if store is not None else None
        return target

    def _notice(self, text: str) -> None:
        self.engine.background_event({"type": "notice", "text": text})

    async def run(self, job: Job) -> RunRecord:
        engine = self.engine
        host = engine.host
        user = msgs.user_message(job.prompt)
        options: dict[str, Any] = {"provider": job.provider, "model": job.model}
        if job.execution == "main":
            target = self._target(job)
            if target is None or (":" not in target and target != "tui"):
                self._notice(f"cron job '{job.id}': no target session to run in ({job.target!r}); skipped")
                return self._record(job, "", False)
            if target.startswith("discord:") or target == "owner":
                self._notice(f"cron job '{job.id}': cireil has no Discord channel; {target} skipped")
                return self._record(job, "", False)
            if engine.busy:
                self._notice(f"cron job '{job.id}': {target} is busy with another turn; skipped")
                return self._record(job, "", False)
            try:
                outcome = await engine.run_turn(
                    host.session_for(target), user, on_event=engine.background_event, **options
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return self._record(job, f"⚠️ Engine error: {mask(str(exc))}", False)
            text = outcome.responses[-1].get("content", "") if outcome.responses else ""
            return self._record(job, text, True)
        session = Session(self._source(job), platform="internal")  # fresh each run, never saved
        try:
            outcome = await engine.run_turn(session, user, on_event=lambda event: None, persist=False, **options)
            text, ok = (outcome.responses[-1].get("content", "") if outcome.responses else ""), True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            text, ok = f"⚠️ Engine error: {mask(str(exc))}", False
        await self._deliver(job, text)
        return self._record(job, text, ok)

    def _record(self, job: Job | str, text: str, ok: bool) -> RunRecord:
        record = RunRecord(self.clock(), text, ok)
        self.last[job if isinstance(job, str) else job.id] = record
        return record

    async def pulse(self) -> RunRecord:
        """One heartbeat pulse, with every condition the original puts on it; a skip says why."""
        heartbeat = self.heartbeat
        engine = self.engine
        host = engine.host
        if heartbeat is None:
            return self._record(PULSE, "", False)
        if not heartbeat.active(self.clock()):
            return self._record(PULSE, f"skipped: outside the active hours ({heartbeat.hours_text})", False)
        if not tasks_text(host.directory):
            return self._record(PULSE, "skipped: tasks/HEARTBEAT.md is missing or empty", False)
        target = heartbeat.target
        if target == "last":
            target = host.store.last_active() if host.store is not None else None
        if target is None or target == "none":
            return self._record(PULSE, "skipped: no target session", False)
        if target.startswith("discord:") or target == "owner":
            self._notice(f"heartbeat: cireil has no Discord channel; {target} skipped")
            return self._record(PULSE, f"skipped: {target} is a Discord channel", False)
        if engine.busy:
            return self._record(PULSE, f"skipped: {target} is busy with another turn", False)
        session = host.session_for(target)
        events: list[dict] = []
        user = msgs.user_message(PROMPT, persistent=False)  # the original adds it with persist: false
        try:
            outcome = await engine.run_turn(
                session, user, on_event=events.append, provider=heartbeat.provider, model=heartbeat.model
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._notice(f"heartbeat: ⚠️ Engine error: {mask(str(exc))}")
            return self._record(PULSE, f"⚠️ Engine error: {mask(str(exc))}", False)
        text = outcome.responses[-1].get("content", "") if outcome.responses else ""
        visible = heartbeat.show_ok if text.strip() == OK_REPLY else heartbeat.show_alerts
        if visible:
            for event in events:
                if event.get("type") == "respond":
                    engine.background_event(event)
        return self._record(PULSE, text, True)

    async def _deliver(self, job: Job, text: str) -> None:
        if job.delivery == "none" or not text:
            return
        if job.delivery == "webhook":
            await self._webhook(job, text)
            return
        target = self._target(job)
        if target is None:
            return
        if target.startswith("discord:") or target == "owner":
            self._notice(f"cron job '{job.id}': cireil has no Discord channel; not announced to {target}: {text}")
            return
        try:
            self.engine.deliver(target, text, source=self._source(job))
        except SessionError as exc:  # the result could not be kept in the target: said once, the job goes on
            self._notice(f"cron job '{job.id}': not announced to {target}: {exc}")
            return
        self.engine.background_event({"type": "announce", "sessionId": target, "content": text, "jobId": job.id})

    async def _webhook(self, job: Job, text: str) -> None:
        if not job.webhook_url:
            self._notice(f"cron job '{job.id}': delivery = \"webhook\" without webhookUrl; the result is dropped")
            return
        import httpx

        payload = {"agentSlug": self.engine.host.slug, "content": text, "jobId": job.id}
        try:
            async with httpx.AsyncClient(timeout=WEBHOOK_TIMEOUT_S, follow_redirects=False) as client:
                response = await client.post(job.webhook_url, json=payload)
            if response.status_code >= 400:
                self._notice(f"cron job '{job.id}': the webhook answered HTTP {response.status_code}")
        except httpx.HTTPError as exc:
            with contextlib.suppress(Exception):
                self._notice(f"cron job '{job.id}': the webhook failed: {exc or type(exc).__name__}")
