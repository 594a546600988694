"""Session checkpoints: restore() also takes back the outputs a model call rewrote in place (superseded reads)."""

from __future__ import annotations

from cireil.runtime.sessions import messages as m
from cireil.runtime.sessions.state import Session

STUB = {"path": "/workspace/a.txt", "superseded": True}


def test_restore_puts_rewritten_outputs_back_and_a_checkpoint_makes_them_final() -> None:
    session = Session("notebook:main")
    first = m.tool_response("c1", "read", {"content": "old", "path": "/workspace/a.txt", "success": True})
    session.history.append(first)
    before = dict(first["output"])
    checkpoint = session.state()
    session.rewrite_output(first, STUB)
    session.rewrite_output(first, {"path": "/workspace/a.txt", "superseded": True, "again": 1})  # changed twice
    session.history.append(m.user_message("later"))
    assert session.history[0] is first
    session.restore(checkpoint)
    assert first["output"] == before and session.history == [first]  # the very message, its first output back
    session.rewrite_output(first, STUB)
    checkpoint = session.state()  # committed: a later restore keeps it
    session.restore(checkpoint)
    assert first["output"] == STUB and session.rewritten == []
