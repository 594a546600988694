"""Where runs execute: one small interface, a local process pool by default.

An executor takes `submit(fn, arg) -> concurrent.futures.Future` and `stop()` (cancel what has not
started, end what is running, keep what finished). Runs are independent processes' work: a turn loop,
a sandbox, sqlite, each on its own copy of the agent, so a pool of processes keeps them apart.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol


class Executor(Protocol):
    jobs: int
    shares_files: bool  # False: workers may be other machines; each run carries its copy of the agent

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


def _quiet_worker() -> None:
    # Ctrl-C reaches the whole process group: the parent decides what stops, a worker never dies mid-write
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalExecutor:
    """A pool of `jobs` worker processes on this machine (spawned: the parent may be a kernel with threads)."""

    shares_files = True

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self._pool = ProcessPoolExecutor(
            max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_quiet_worker
        )

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future:
        return self._pool.submit(fn, arg)

    def stop(self) -> None:
        processes = list((self._pool._processes or {}).values())  # the pool has no public handle on its workers
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


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
        self._waiting: list[tuple[Callable[[Any], Any], Any, Future]] = []
        self._running: dict[Future, Any] = {}
        self._stopped = False

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future:
        future: Future = Future()
        with self._lock:
            self._waiting.append((fn, arg, future))
        self._fill()
        return future

    def _fill(self) -> None:
        # at most `jobs` runs on the cluster at once: --jobs means the same everywhere
        with self._lock:
            starting = []
            while self._waiting and len(self._running) < self.jobs and not self._stopped:
                fn, arg, future = self._waiting.pop(0)
                if future.set_running_or_notify_cancel():
                    starting.append((fn, arg, future))
                    self._running[future] = None
        for fn, arg, future in starting:
            remote = self.client.submit(fn, arg, pure=False)
            with self._lock:
                self._running[future] = remote
            remote.add_done_callback(lambda done, f=future: self._finished(f, done))

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
        for _, _, future in waiting:
            future.cancel()
        if running:
            self.client.cancel(running)

    def close(self) -> None:
        if self._own:
            self.client.close()
