"""Where runs execute: one small interface, a local process pool by default.

An executor takes `submit(fn, arg) -> concurrent.futures.Future` and `stop()` (cancel what has not
started, end what is running, keep what finished). Runs are independent processes' work: a turn loop,
a sandbox, sqlite, each on its own copy of the agent, so a pool of processes keeps them apart.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol


class Executor(Protocol):
    jobs: int

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


def _quiet_worker() -> None:
    # Ctrl-C reaches the whole process group: the parent decides what stops, a worker never dies mid-write
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalExecutor:
    """A pool of `jobs` worker processes on this machine (spawned: the parent may be a kernel with threads)."""

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
