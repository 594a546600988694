"""The runtime's own event loop, on one background thread, started on first use.

Inside a kernel the main thread's loop belongs to ipykernel and is busy running the cell, so
blocking calls (`agent.call`, magics) submit coroutines here and wait. A KeyboardInterrupt while
waiting cancels the coroutine and waits (bounded) until its cleanup has run, so that an interrupted
exec has killed its processes before the next cell starts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from .cancel import context_with

T = TypeVar("T")

_CANCEL_GRACE_S = 10.0
_RESPONSIVE_S = 0.3  # how long the loop may take to answer before it counts as stuck in synchronous work


class RuntimeLoop:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or not self.running:
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()
                    loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.close()

                self._thread = threading.Thread(target=serve, name="cireil-runtime", daemon=True)
                self._loop = loop
                self._thread.start()
                ready.wait()
            return self._loop

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> Submitted[T]:
        """Schedule `coro` on the runtime loop; returns at once."""
        return Submitted(coro, self.loop())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the runtime loop and wait; Ctrl-C / kernel interrupt cancels it cleanly."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("blocking call from inside the runtime loop; use the async API (acall)")
        return self.submit(coro).wait()

    def stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop, self._thread = None, None
        if loop is None or thread is None:
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(_CANCEL_GRACE_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_CANCEL_GRACE_S)


class Submitted(Generic[T]):
    """Work running on the runtime loop, seen from another thread.

    Unlike `run_coroutine_threadsafe`, it knows when the task has really finished (cleanup
    included), which is what an interrupt must wait for.
    """

    def __init__(self, coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._finished = threading.Event()
        self._task: asyncio.Task[T] | None = None
        self._cancelled = False
        self._cancel_flag = threading.Event()  # seen at once by synchronous work (cancel.cancel_requested)
        loop.call_soon_threadsafe(self._start, coro)

    def _start(self, coro: Coroutine[Any, Any, T]) -> None:
        if self._cancelled:
            coro.close()
            self._future.cancel()
            self._finished.set()
            return
        self._task = self._loop.create_task(coro, context=context_with(self._cancel_flag))
        self._task.add_done_callback(self._settle)

    def _settle(self, task: asyncio.Task[T]) -> None:
        if self._future.done():  # the waiting side gave up (cancelled) first
            if not task.cancelled():
                task.exception()  # retrieved, so asyncio does not log it as lost
        elif task.cancelled():
            self._future.cancel()
        elif task.exception() is not None:
            self._future.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            self._future.set_result(task.result())
        self._finished.set()

    def _cancel_in_loop(self) -> None:
        self._cancelled = True
        if self._task is not None:
            self._task.cancel()

    def done(self) -> bool:
        return self._finished.is_set()

    def add_done_callback(self, fn: Callable[[Submitted[T]], None]) -> None:
        """`fn(self)` once the work has finished; runs on the runtime thread (or at once if done)."""
        self._future.add_done_callback(lambda _f: fn(self))

    def result(self, timeout: float | None = None) -> T:
        return self._future.result(timeout)

    def cancel(self) -> None:
        self._cancel_flag.set()
        self._loop.call_soon_threadsafe(self._cancel_in_loop)

    def cancel_and_wait(self, timeout: float = _CANCEL_GRACE_S) -> bool:
        """Cancel and wait until the task's own cleanup has run; False if it did not finish in time."""
        try:
            self.cancel()
        except RuntimeError:  # the loop is already closed: nothing left to cancel
            return True
        # The cancel is delivered by the loop thread. Stuck in synchronous work (a tool computing without
        # awaiting), it can run neither the cancel nor any cleanup until that work ends: waiting the whole
        # grace kept an interrupted kernel unresponsive for 10 s and more. Wait for the cleanup (exec killing
        # its processes) only when the loop answers; the abandoned work is cancelled once it yields.
        if not self._loop_answers(_RESPONSIVE_S):  # answered = the cancel, queued before, has run
            return self._finished.is_set()
        return self._finished.wait(timeout)

    def _loop_answers(self, timeout: float) -> bool:
        answered = threading.Event()
        try:
            self._loop.call_soon_threadsafe(answered.set)
        except RuntimeError:
            return True
        return answered.wait(timeout)

    def wait(self) -> T:
        """Block until done; a KeyboardInterrupt cancels the work, waits for its cleanup, re-raises."""
        try:
            while not self._finished.wait(0.25):
                pass
        except KeyboardInterrupt:
            self.cancel_and_wait()
            raise
        return self._future.result()

    async def wrapped(self) -> T:
        """Await from another event loop (e.g. the kernel's); cancelling the awaiter cancels the work."""
        try:
            return await asyncio.wrap_future(self._future)
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.get_running_loop().run_in_executor(None, self._finished.wait, _CANCEL_GRACE_S)
            raise


RUNTIME = RuntimeLoop()
