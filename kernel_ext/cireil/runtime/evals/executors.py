"""Where runs execute: one small interface, a local process pool by default.

An executor takes `submit(fn, arg, timeout=None) -> concurrent.futures.Future`, `stop()` (cancel what has
not started, end what is running, keep what finished) and `close()`. Runs are independent processes' work:
a turn loop, a sandbox, sqlite, each on its own copy of the agent, so a pool of processes keeps them apart.

`timeout` is the run's hard stop, whatever the run is doing (its turn, a scenario's Python check, reading
its recording): past it the future fails with `RunTimedOut` and the local pool ends that worker process
(and starts another), so a run stuck in C code or a check that never returns cannot outlive --timeout.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

from ..base.controls import TerminalSafe

# seconds past a run's timeout before its worker is ended: the worker's own deadline (the turn's) comes first
# and reports what the run did; this is the backstop for a run stuck where no deadline reaches
GRACE_S = 2.0
# seconds a fresh worker may take to start (spawn, imports) before its run's own clock starts: the deadline
# counts from the moment the worker says it has begun, as the run's own deadline does
STARTUP_S = 60.0


class RunTimedOut(Exception):
    """A run went past its timeout and was ended from outside."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(
            f"timed out: the run was still going at its --timeout of {timeout:g} seconds and was stopped"
            " (a turn, a check or the recording did not finish)"
        )


class Executor(Protocol):
    jobs: int
    shares_files: bool  # False: workers may be other machines; each run carries its copy of the agent

    def submit(self, fn: Callable[[Any], Any], arg: Any, timeout: float | None = None) -> Future: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


def _serve(conn: Connection) -> None:
    """A worker process: runs what it is sent, one at a time, until told to stop (None) or ended."""
    # Ctrl-C reaches the whole process group: the parent decides what stops, a worker never dies mid-write
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a group of its own: a worker ended at its deadline takes the processes its run started along with it
    os.setpgrp()
    # what a run prints (a check's print, a library's warning) reaches the eval's terminal: filtered as the CLI's
    if sys.stdout is not None:
        sys.stdout = TerminalSafe(sys.stdout)
    if sys.stderr is not None:
        sys.stderr = TerminalSafe(sys.stderr)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        fn, arg = task
        conn.send(("started", None))
        try:
            outcome = ("ok", fn(arg))
        except BaseException as exc:  # carried back as the run's failure; the worker serves on
            outcome = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(outcome)
        except Exception as exc:  # a result that cannot be pickled: say so instead of hanging the parent
            conn.send(("error", f"the run's result could not be sent back: {type(exc).__name__}: {exc}"))


class _Worker:
    def __init__(self, context: Any) -> None:
        self.conn, child = context.Pipe()
        # not a daemon, as ProcessPoolExecutor's workers are not: a run may start processes of its own
        self.process = context.Process(target=_serve, args=(child,), daemon=False)
        self.process.start()
        child.close()
        self.future: Future | None = None
        self.deadline: float | None = None
        self.timeout: float | None = None

    def end(self, *, kill: bool = False) -> None:
        """Wait for a worker told to stop, or (kill) end it and every process its run started."""
        if kill and self.process.is_alive():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.process.pid, sig)
                except (ProcessLookupError, PermissionError):  # not its group yet (just spawned): the process
                    self.process.kill() if sig == signal.SIGKILL else self.process.terminate()
                self.process.join(timeout=2)
                if not self.process.is_alive():
                    break
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()


class LocalExecutor:
    """`jobs` worker processes on this machine (spawned: the parent may be a kernel with threads).

    Each worker runs one run at a time; one that goes past its timeout is ended and replaced."""

    shares_files = True

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._waiting: list[tuple[Callable[[Any], Any], Any, float | None, Future]] = []
        self._workers: list[_Worker] = []
        self._closing = self._stopped = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)  # a full pipe already says "wake up"
        self._thread = threading.Thread(target=self._loop, name="cireil-eval-pool", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[Any], Any], arg: Any, timeout: float | None = None) -> Future:
        future: Future = Future()
        with self._lock:
            if self._stopped or self._closing:
                raise RuntimeError("the executor is shut down")
            self._waiting.append((fn, arg, timeout, future))
        self._wake()
        return future

    def _wake(self) -> None:
        with self._lock:
            if self._wake_w < 0:  # the loop has ended (and closed the pipe, whose number may be reused)
                return
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"x")

    def _dispatch(self) -> None:
        with self._lock:
            for dead in [w for w in self._workers if w.future is None and not w.process.is_alive()]:
                self._workers.remove(dead)  # ended while idle (the OOM killer, a signal): a new one takes over
                dead.conn.close()
            while self._waiting and not self._stopped:
                idle = next((w for w in self._workers if w.future is None), None)
                if idle is None and len(self._workers) >= self.jobs:
                    return
                fn, arg, timeout, future = self._waiting.pop(0)
                if not future.set_running_or_notify_cancel():
                    continue
                if idle is None:
                    idle = _Worker(self._context)
                    self._workers.append(idle)
                idle.future, idle.timeout = future, timeout
                idle.deadline = None if timeout is None else time.monotonic() + STARTUP_S + timeout + GRACE_S
                try:
                    idle.conn.send((fn, arg))
                except Exception as exc:  # an argument that cannot be pickled: that run fails, the rest go on
                    idle.future, idle.deadline = None, None
                    future.set_exception(RuntimeError(f"the run could not be sent to a worker: {exc}"))

    def _retire(self, worker: _Worker, error: BaseException) -> None:
        """End a worker (it overran, died, or the eval stops); its run fails with `error`."""
        future = worker.future
        worker.future = None
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)
        worker.end(kill=True)
        if future is not None and not future.done():
            future.set_exception(error)

    def _loop(self) -> None:
        # the only thread that touches the workers: submit and stop only queue work and wake it
        while True:
            if self._stopped:
                for worker in [w for w in self._workers if w.future is not None]:
                    self._retire(worker, RuntimeError("stopped"))
                break
            self._dispatch()
            busy = [w for w in self._workers if w.future is not None]
            with self._lock:
                if self._closing and not busy and not self._waiting:
                    break
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            ready = wait([self._wake_r, *(w.conn for w in busy)], timeout=wait_s)
            if self._wake_r in ready:
                os.read(self._wake_r, 4096)
            for worker in busy:
                if worker.conn in ready:
                    self._collect(worker)
            now = time.monotonic()
            for worker in busy:
                if worker.future is not None and worker.deadline is not None and now >= worker.deadline:
                    self._retire(worker, RunTimedOut(worker.timeout or 0.0))
        with self._lock:
            workers, self._workers = self._workers, []
        for worker in workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
            worker.end()
        with self._lock:
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_w = -1

    def _collect(self, worker: _Worker) -> None:
        future = worker.future
        try:
            kind, value = worker.conn.recv()
            if kind == "started":
                if worker.timeout is not None:
                    worker.deadline = time.monotonic() + worker.timeout + GRACE_S
                return
        except (EOFError, OSError):  # killed (out of memory, a signal): that run errs, the others go on
            code = worker.process.exitcode
            self._retire(worker, RuntimeError(f"the worker process ended unexpectedly (exit code {code})"))
            return
        worker.future, worker.deadline = None, None
        if future is None or future.done():
            return
        if kind == "ok":
            future.set_result(value)
        else:
            future.set_exception(RuntimeError(value))

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            waiting, self._waiting = self._waiting, []
        for *_, future in waiting:
            future.cancel()
        self._wake()
        self._thread.join(timeout=30)

    def close(self) -> None:
        with self._lock:
            self._closing = True
        self._wake()
        self._thread.join()


class DaskExecutor:
    """Runs on a Dask distributed cluster (the optional `cireil[dask]` extra), at most `jobs` at a time.

    Give it a `distributed.Client` or a scheduler address. The workers need cireil installed; each run
    carries its agent copy and attachments, so they need not see this machine's files (a scenario's
    Python check module must be importable there, though)."""

    shares_files = False

    def __init__(self, client: Any, jobs: int | None = None, *, connect_timeout: float = 10) -> None:
        from distributed import Client

        self._own = not isinstance(client, Client)
        self.client = Client(client, timeout=connect_timeout) if self._own else client
        threads = sum(self.client.nthreads().values()) or 1
        self.jobs = max(1, jobs or threads)
        self._lock = threading.Lock()
        self._waiting: list[tuple[Callable[[Any], Any], Any, float | None, Future]] = []
        self._running: dict[Future, Any] = {}
        self._stopped = False
        self._timers: list[threading.Timer] = []

    def submit(self, fn: Callable[[Any], Any], arg: Any, timeout: float | None = None) -> Future:
        future: Future = Future()
        with self._lock:
            self._waiting.append((fn, arg, timeout, future))
        self._fill()
        return future

    def _fill(self) -> None:
        # at most `jobs` runs on the cluster at once: --jobs means the same everywhere
        with self._lock:
            starting = []
            while self._waiting and len(self._running) < self.jobs and not self._stopped:
                fn, arg, timeout, future = self._waiting.pop(0)
                if future.set_running_or_notify_cancel():
                    starting.append((fn, arg, timeout, future))
                    self._running[future] = None
        for fn, arg, timeout, future in starting:
            remote = self.client.submit(fn, arg, pure=False)
            with self._lock:
                self._running[future] = remote
            if timeout is not None:
                timer = threading.Timer(timeout + GRACE_S, self._overran, (future, remote, timeout))
                timer.daemon = True
                with self._lock:
                    self._timers.append(timer)
                timer.start()
            remote.add_done_callback(lambda done, f=future: self._finished(f, done))

    def _overran(self, future: Future, remote: Any, timeout: float) -> None:
        # a task running on the cluster cannot be ended from here: it is cancelled, its run reported as timed
        # out, and its slot given to the next run
        with self._lock:
            if self._running.pop(future, None) is None or future.done():
                return
        self.client.cancel([remote])
        if not future.done():
            future.set_exception(RunTimedOut(timeout))
        self._fill()

    def _finished(self, future: Future, remote: Any) -> None:
        with self._lock:
            self._running.pop(future, None)
        if not future.done():
            try:
                future.set_result(remote.result())
            except BaseException as exc:  # a cancelled or failed task: the runner records that run as failed
                future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        self._fill()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            waiting, self._waiting = self._waiting, []
            running = [r for r in self._running.values() if r is not None]
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        for *_, future in waiting:
            future.cancel()
        if running:
            self.client.cancel(running)

    def close(self) -> None:
        with self._lock:
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        if self._own:
            self.client.close()
