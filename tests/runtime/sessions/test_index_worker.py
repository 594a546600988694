"""The first index build's worker processes (indexworker.py, workerpipe.py): a build through them indexes as a
build in the kernel does, whatever they meet (a death mid-build, a broken pipe, no interpreter to start, a json.py
in the notebook's folder, a database that is not one), they run apart from the kernel's interrupts and end with
the build, and the kernel takes nothing but plain values from them."""

from __future__ import annotations

import os
import pickle
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest
from test_scale_index import agent_copy, big_db, index_of, inline_index

from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.indexbuild import IndexBuilder, RowIndex
from cireil.runtime.sessions.workerpipe import WorkerProcess, plain_loads

__all__ = ["big_db"]  # the fixture, shared with test_scale_index.py


def through_workers(monkeypatch: pytest.MonkeyPatch) -> list[WorkerProcess]:
    """Every build reads through two worker processes, whatever its size and the machine's cores; the list fills
    with the workers started."""
    started: list[WorkerProcess] = []
    real = WorkerProcess.__init__

    def recorded(self, *args):
        real(self, *args)
        started.append(self)

    monkeypatch.setattr(WorkerProcess, "__init__", recorded)
    monkeypatch.setattr(IndexBuilder, "workers_for", classmethod(lambda cls, size: 2))
    return started


def odd_rows(path: Path) -> None:
    """Rows a worker must hand back as the kernel reads them: text that is not UTF-8, in last_activity and in
    the history itself, and a history no JSON parser takes."""
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        for row_id, history, activity in (
            ("internal:bad-activity", "[]", b"2026-01-01\xff"),
            ("internal:bad-history", b'[{"role":"user","content":"\xfe"}]', None),
            ("internal:no-json", "[{", None),
        ):
            raw.execute(
                "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity, history_cursor,"
                " active_file_sections) VALUES (?, 'internal', '{}', CAST(? AS TEXT), '[]', CAST(? AS TEXT), 0, '{}')",
                (row_id, history, activity),
            )
    finally:
        raw.close()


def built_without_failure(directory: Path) -> tuple:
    """The index a first open of the agent builds, once its build ended without a failure."""
    store = SessionStore.for_agent(directory)
    try:
        got = index_of(store)
        assert store._builder.failure is None
    finally:
        store.close()
    return got


def alive(workers: list[WorkerProcess]) -> list[int]:
    return [w.process.pid for w in workers if w.process.poll() is None]


def test_a_build_through_worker_processes_indexes_as_a_build_here_does(big_db, tmp_path, monkeypatch):
    reference = agent_copy(big_db, tmp_path / "reference")
    odd_rows(reference / "sessions.db")
    expected = inline_index(reference, monkeypatch)
    errors = {s["id"]: s["preview"] for s in expected[0] if s["preview"].startswith("[unreadable")}
    assert len(errors) == 3
    directory = agent_copy(big_db, tmp_path / "agent")
    odd_rows(directory / "sessions.db")
    started = through_workers(monkeypatch)
    assert built_without_failure(directory) == expected
    assert len(started) == 2 and alive(started) == []


def test_a_worker_runs_apart_from_the_kernels_interrupts(big_db, tmp_path, monkeypatch):
    """The notebook's stop button signals the kernel's process group: a worker is in a session of its own."""
    started = through_workers(monkeypatch)
    store = SessionStore.for_agent(agent_copy(big_db, tmp_path / "agent"))
    try:
        assert store._builder is not None
        deadline = time.monotonic() + 30
        while not started and time.monotonic() < deadline:
            time.sleep(0.01)
        sessions = {os.getsid(w.process.pid) for w in started if w.process.poll() is None}
        assert os.getsid(0) not in sessions
    finally:
        store.close()


def test_a_worker_imports_nothing_from_the_kernels_working_directory(big_db, tmp_path, monkeypatch):
    """IPython puts the notebook's folder first on sys.path; a json.py there must not stand in for the standard
    library's in a worker, which imports it afresh."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    marker = tmp_path / "imported"
    (folder / "json.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('not json')\n")
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", ["", str(folder), *sys.path])
    through_workers(monkeypatch)
    answered = []
    real = WorkerProcess.answer

    def counted(self):
        answer = real(self)
        answered.append(answer)
        return answer

    monkeypatch.setattr(WorkerProcess, "answer", counted)
    store = SessionStore.for_agent(agent_copy(big_db, tmp_path / "agent"))
    try:
        index_of(store)
    finally:
        store.close()
    assert len(answered) == 24 and not marker.exists()


def test_a_worker_that_dies_leaves_its_rows_to_be_read_here(big_db, tmp_path, monkeypatch):
    expected = inline_index(agent_copy(big_db, tmp_path / "reference"), monkeypatch)
    started = through_workers(monkeypatch)
    real = WorkerProcess.answer

    def killed_after_one(self):
        answer = real(self)
        self.process.kill()  # as the kernel's out-of-memory killer would: its answers end mid-stream
        return answer

    monkeypatch.setattr(WorkerProcess, "answer", killed_after_one)
    assert built_without_failure(agent_copy(big_db, tmp_path / "agent")) == expected
    assert len(started) == 2 and alive(started) == []


def test_rows_asked_of_a_worker_that_died_are_read_here(big_db, tmp_path, monkeypatch):
    expected = inline_index(agent_copy(big_db, tmp_path / "reference"), monkeypatch)
    started = through_workers(monkeypatch)
    monkeypatch.setattr(IndexBuilder, "ASK_ROWS", 2)
    real = WorkerProcess.ask

    def dead_at_the_second_ask(self, row_ids, *, early=False):
        if getattr(self, "asked", 0) == 1:
            self.process.kill()
            self.process.wait()  # its stdin is closed for good: this ask fails with a broken pipe
        self.asked = getattr(self, "asked", 0) + 1
        return real(self, row_ids, early=early)

    monkeypatch.setattr(WorkerProcess, "ask", dead_at_the_second_ask)
    assert built_without_failure(agent_copy(big_db, tmp_path / "agent")) == expected
    assert len(started) == 2 and alive(started) == []


def test_without_a_worker_the_build_reads_here(big_db, tmp_path, monkeypatch):
    expected = inline_index(agent_copy(big_db, tmp_path / "reference"), monkeypatch)
    through_workers(monkeypatch)
    monkeypatch.setattr(sys, "executable", "")  # an embedded Python: no interpreter to start
    store = SessionStore.for_agent(agent_copy(big_db, tmp_path / "agent"))
    try:
        assert index_of(store) == expected
    finally:
        store.close()


def test_closing_the_agent_ends_its_workers(big_db, tmp_path, monkeypatch):
    started = through_workers(monkeypatch)
    reached = threading.Event()
    real = WorkerProcess.answer

    def held(self):
        reached.set()
        while not builder._stop.wait(0.02):  # holds the reader until close() stops the build
            pass
        return real(self)

    monkeypatch.setattr(WorkerProcess, "answer", held)
    store = SessionStore.for_agent(agent_copy(big_db, tmp_path / "agent"))
    builder = store._builder
    assert builder is not None and reached.wait(30)
    begun = time.perf_counter()
    store.close()
    assert time.perf_counter() - begun < 5
    assert not any(thread.is_alive() for thread in builder._threads)
    assert started and alive(started) == []


def test_a_worker_says_what_reading_a_row_raised(tmp_path):
    bogus = tmp_path / "sessions.db"
    bogus.write_bytes(b"not a database at all" * 100)
    columns = ["id", "channel", "meta", "history", "opened_files", "last_activity", "history_cursor"]
    worker = WorkerProcess(f"file:{bogus}?mode=ro", columns)
    try:
        worker.ask(["internal:a"])
        kind, message = worker.answer()
        assert kind == "failed" and message.startswith("DatabaseError:") and "not a database" in message
    finally:
        worker.end()
    worker = WorkerProcess(f"file:{bogus}?mode=ro", ["id"])  # a setup that raises: said for every row asked
    try:
        worker.ask(["internal:a", "internal:b"])
        assert [worker.answer()[0], worker.answer()[0]] == ["failed", "failed"]
    finally:
        worker.end()
    assert worker.process.returncode is not None


def test_the_kernel_takes_plain_values_only_from_a_worker():
    assert plain_loads(pickle.dumps(("entry", 5, ("fp", None, [(1, "user", "", 1.5, "hi")])))) == (
        "entry",
        5,
        ("fp", None, [(1, "user", "", 1.5, "hi")]),
    )

    class Boom:
        def __reduce__(self):
            return (os.system, ("touch /tmp/cireil-pwned",))

    for hostile in (pickle.dumps(Boom()), pickle.dumps(RowIndex("r", "fp")), pickle.dumps(sqlite3.Row)):
        with pytest.raises(pickle.UnpicklingError, match="only plain values"):
            plain_loads(hostile)
    assert not Path("/tmp/cireil-pwned").exists()
