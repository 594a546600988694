"""The first index build's worker process in a real kernel: the notebook's stop button (an interrupt of the
kernel's process group) stops the cell it was meant for, never the build's worker."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import upstream_db as up
from conftest import make_agent

ROWS = 12


def fill(db_path: Path) -> None:
    """Sessions in the original's rows, each with one message holding a marker the index must find."""
    up.create_original_db(db_path)
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        for n in range(ROWS):
            history = [
                {"content": {"content": f"note {i} " + "garden " * 40, "type": "text"}, "role": "user",
                 "timestamp": 1772000000000 + i}
                for i in range(300)
            ]  # fmt: skip
            history[-1]["content"]["content"] += " quokka"
            db.execute(
                "INSERT INTO sessions (id, channel, meta, history, opened_files, history_cursor,"
                " active_file_sections) VALUES (?, 'internal', '{}', ?, '[]', 0, '{}')",
                (f"internal:s{n:02d}", up.dumps(history)),
            )
    finally:
        db.close()


SETUP = """
import os, threading, time
from cireil.runtime.sessions.indexbuild import IndexBuilder
from cireil.runtime.sessions.sideindex import SideIndex
from cireil.runtime.sessions.workerpipe import WorkerProcess

SideIndex.INLINE_INDEX_BYTES = 0  # this small agent's index is built in the background, by a worker
IndexBuilder.WORKER_BYTES = 0
IndexBuilder.workers_for = classmethod(lambda cls, size: 1)
answers, workers, slow = [], [], threading.Event()
_answer, _start = WorkerProcess.answer, WorkerProcess.__init__

def _counted(self):
    answer = _answer(self)
    answers.append(answer)
    slow.wait(0.25)  # the build lasts while a cell sleeps and is interrupted
    return answer

def _started(self, *args):
    _start(self, *args)
    workers.append(self)

WorkerProcess.answer, WorkerProcess.__init__ = _counted, _started
"""


def test_an_interrupt_stops_the_cell_and_the_build_goes_on_in_its_worker(kernel, tmp_path):
    agent = make_agent(tmp_path)
    fill(agent / "sessions.db")
    kernel.run(SETUP)
    kernel.run(f"%load_ext cireil\n%cireil load {agent}")
    msg_id = kernel.submit("time.sleep(30)")
    time.sleep(1.0)
    kernel.interrupt()
    run = kernel.collect(msg_id, timeout=25)
    assert run.status == "error" and run.error["ename"] == "KeyboardInterrupt"
    alive = kernel.run("[w.process.poll() for w in workers], len(answers)").result["text/plain"]
    assert alive.startswith("([None], ") and not alive.endswith(f" {ROWS})"), alive  # mid-build, its worker alive
    kernel.run("slow.set()")
    done = kernel.run(
        "import cireil\n"
        "store = cireil.current_agent().store\n"
        "store.wait_for_index(60), store._builder.failure, len(answers),"
        " store.query('quokka', mode='raw')[1], [w.process.poll() is not None for w in workers]"
    )
    assert done.result["text/plain"] == f"(True, None, {ROWS}, {ROWS}, [True])"
