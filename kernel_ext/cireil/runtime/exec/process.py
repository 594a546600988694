"""Run one command under a deadline and feed its output to a callback as it arrives.

The command runs in its own session (`start_new_session=True`), so its whole process group can be
killed at once. The deadline covers writing stdin and draining both pipes. When the parent process
exits, the group is killed at once (a background child must not outlive the call) and the pipes are
drained for a bounded time, so a descendant that escaped the group and still holds a pipe cannot make
collection wait. Cancellation kills the group, waits briefly for the exit, and propagates.

The pipes and the process are watched directly on the event loop (non-blocking reads, a pidfd for the
exit) rather than through asyncio's subprocess transports: no watcher thread per process and fewer
loop round trips, which is most of what a short command costs beyond bwrap itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..base.errors import ToolError
from .sandbox import Launch

PIPE_BYTES = 1 << 20  # larger pipes and reads: fewer wake-ups for bulk output
DRAIN_S = 2.0  # after a kill or an exit: how long pipes may take to deliver what they still hold
_REAP_S = 2.0  # after SIGKILL on cancellation: how long to wait for the processes to be gone
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux

OnData = Callable[[str, bytes], None]


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    timed_out: bool
    duration_s: float


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _wait(future: asyncio.Future, seconds: float) -> bool:
    """Wait for `future` at most `seconds` (never cancelling it); True if it completed."""
    if future.done() or seconds <= 0:
        return future.done()
    done, _ = await asyncio.wait({future}, timeout=seconds)
    return bool(done)


class _Watch:
    """The loop-side state of one process: readers on its pipes, a writer for stdin, its exit."""

    def __init__(self, proc: subprocess.Popen, loop: asyncio.AbstractEventLoop, on_data: OnData) -> None:
        self.proc, self.loop, self.on_data = proc, loop, on_data
        self.exited: asyncio.Future = loop.create_future()
        self.drained: asyncio.Future = loop.create_future()
        self.readers: dict[int, str] = {}
        self.pidfd: int | None = None
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            assert pipe is not None
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)
            self.readers[fd] = name
            loop.add_reader(fd, self._readable, fd)
        try:
            self.pidfd = os.pidfd_open(proc.pid)
            loop.add_reader(self.pidfd, self._exit)
        except (AttributeError, OSError):  # no pidfd (Linux < 5.3): a thread waits instead
            loop.run_in_executor(None, proc.wait).add_done_callback(lambda _f: self._exit())

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, PIPE_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.on_data(self.readers[fd], data)
            return
        self.loop.remove_reader(fd)
        del self.readers[fd]
        if not self.readers and not self.drained.done():
            self.drained.set_result(None)

    def _exit(self) -> None:
        if self.pidfd is not None:
            self.loop.remove_reader(self.pidfd)
        if not self.exited.done():
            self.exited.set_result(None)

    def feed_stdin(self, data: bytes) -> None:
        pipe = self.proc.stdin
        assert pipe is not None
        fd = pipe.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)

        def writable() -> None:
            nonlocal view
            try:
                view = view[os.write(fd, view[:PIPE_BYTES]) :]
            except BlockingIOError:
                return
            except OSError:  # the command closed its stdin or exited: the rest is not wanted
                view = view[:0]
            if not view:
                self.loop.remove_writer(fd)
                pipe.close()

        self.loop.add_writer(fd, writable)

    def close(self) -> None:
        """Unregister everything and close our ends; reap the process if it has exited."""
        for fd in list(self.readers):
            self.loop.remove_reader(fd)
        self.readers.clear()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(ValueError, OSError):
                    self.loop.remove_writer(pipe.fileno())
                pipe.close()
        if self.pidfd is not None:
            self.loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None
        self.proc.poll()  # reaps it if it is gone; otherwise subprocess reaps it later itself


def _start(launch: Launch, stdin: bytes | None) -> subprocess.Popen:
    return subprocess.Popen(
        launch.argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=launch.env,
        cwd=launch.cwd,
        start_new_session=True,
        pass_fds=launch.fds,  # the bind descriptors, to bwrap only (close_fds keeps every other one back)
        preexec_fn=launch.preexec,
    )


async def run(launch: Launch, stdin: bytes | None, timeout_s: float, on_data: OnData) -> Outcome:
    """Run `launch`; raises OSError if it cannot be started, CancelledError when cancelled."""
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    deadline = loop.time() + timeout_s
    try:
        proc = _start(launch, stdin)
    except subprocess.SubprocessError:  # the overlays' namespaces could not be made: plain binds
        launch.without_overlays()
        proc = _start(launch, stdin)
    try:
        launch.started()  # bwrap has its own copies now; ours would only keep the directories pinned
    except ToolError:  # a folder changed before the sandbox was made: the child exited without starting it
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        raise
    pgid = proc.pid  # the session leader: its pid is the group id
    watch = _Watch(proc, loop, on_data)
    timed_out = False
    try:
        if stdin is not None:
            watch.feed_stdin(stdin)
        if await _wait(watch.exited, deadline - loop.time()):
            _kill_group(pgid)  # background children die with their parent
            await _wait(watch.drained, min(DRAIN_S, deadline - loop.time()))
            if not watch.drained.done() and loop.time() >= deadline:
                timed_out = True
        else:
            timed_out = True
            _kill_group(pgid)
            await _wait(watch.drained, DRAIN_S)
            await _wait(watch.exited, DRAIN_S)
    except asyncio.CancelledError:
        _kill_group(pgid)
        with contextlib.suppress(asyncio.CancelledError):
            # so that no process is left when the caller resumes: the leader's exit is not enough, the
            # sandbox's processes die just after it; the pipes close once the last of them is gone
            await _wait(watch.exited, _REAP_S)
            await _wait(watch.drained, _REAP_S)
        raise
    finally:
        watch.close()
    code = proc.returncode
    exit_code = -1 if timed_out or code is None else code
    return Outcome(exit_code, timed_out, time.perf_counter() - started)
