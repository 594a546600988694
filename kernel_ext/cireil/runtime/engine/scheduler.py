"""One-shot scheduled jobs (reference §4.19): persisted in sessions.db, fired on the runtime loop.

A job fires while the kernel lives; one that came due while nothing ran (the kernel was stopped)
runs when the agent is next loaded. A job is deleted after a successful run; one that failed stays
pending and is tried again at the next load.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..base.loop import RUNTIME
from ..sessions import messages as msgs

if TYPE_CHECKING:
    from .runner import TurnRunner


_RECHECK_S = 30.0  # how often a job left to a running original is looked at again


class Scheduler:
    def __init__(self, engine: TurnRunner) -> None:
        self.engine = engine
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.started = False

    def start(self) -> None:
        """Arm every pending job; past-due ones run now (allowed at startup only, as upstream)."""
        store = self.engine.host.store
        if store is None or self.started:
            return
        self.started = True
        jobs = [j for j in store.jobs() if j.get("status", "pending") == "pending"]
        if jobs:
            RUNTIME.loop().call_soon_threadsafe(lambda: [self._arm(j, startup=True) for j in jobs])

    def add(self, job: dict) -> None:
        """Persist (same id replaces the job and its timer) and arm; called on the runtime loop."""
        store = self.engine.host.store
        if store is None:
            raise RuntimeError("scheduled jobs need the session store (sessions.db could not be opened)")
        store.upsert_job(job)
        self._arm(job, startup=False)

    def pending(self) -> list[dict]:
        store = self.engine.host.store
        return store.jobs() if store is not None else []

    def _arm(self, job: dict, *, startup: bool) -> None:
        old = self._timers.pop(job["id"], None)
        if old is not None:
            old.cancel()
        at = datetime.fromisoformat(job["schedule"]["at"])
        delay = (at - datetime.now(UTC)).total_seconds()
        loop = asyncio.get_running_loop()
        if delay <= 0 and not startup:
            delay = 0  # it came due while the tool was returning
        self._timers[job["id"]] = loop.call_later(max(delay, 0), lambda: self.engine.spawn(self.fire(job)))

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    async def fire(self, job: dict) -> None:
        engine = self.engine
        host = engine.host
        self._timers.pop(job["id"], None)
        store = host.store
        if store is not None and store.job_left_to_original(job["id"]):
            # the running original loaded this job at its start and runs it (then deletes its row); should it
            # stop first, the row is still there when cireil looks again, and cireil runs it then
            loop = asyncio.get_running_loop()
            self._timers[job["id"]] = loop.call_later(_RECHECK_S, lambda: self._recheck(job))
            return
        session = host.session_for(f"cron:{host.slug}:{job['id']}")
        try:
            outcome = await engine.run_turn(session, msgs.user_message(job["prompt"]), on_event=lambda e: None)
            text = outcome.responses[-1]["content"] if outcome.responses else ""
            ok = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            text, ok = f"⚠️ Engine error: {exc}", False
        delivered = self._announce(job, text)
        if ok and delivered and host.store is not None:
            host.store.delete_job(job["id"])

    def _recheck(self, job: dict) -> None:
        store = self.engine.host.store
        if store is not None and any(j.get("id") == job["id"] for j in store.jobs()):
            self.engine.spawn(self.fire(job))
        else:
            self._timers.pop(job["id"], None)  # the original ran it

    def _announce(self, job: dict, text: str) -> bool:
        if job.get("delivery", "announce") == "none" or not text:
            return True
        engine = self.engine
        target = job.get("target") or "last"
        try:
            if target == "last":
                target = engine.host.store.last_active()
            if target is None or not engine.host.store.exists(target):
                return False
            engine.deliver(target, text, source=f"cron:{engine.host.slug}:{job['id']}")
        except Exception:
            return False
        engine.background_event({"type": "announce", "sessionId": target, "content": text, "jobId": job["id"]})
        return True
