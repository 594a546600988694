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


def _reply(*ids: str) -> dict:
    return m.assistant_message([{"type": "toolCall", "id": i, "name": "read", "input": {}} for i in ids])


def _ids(message: dict) -> list[str]:
    return [p["id"] for p in m.tool_calls(message)]


def test_call_ids_stay_unique_in_the_session_as_it_grows_and_changes() -> None:
    """What unique_call_ids keeps between steps (Session.call_ids) never lets an id through twice: a history
    that only grew is read from where it was; one that lost, replaced or reordered messages is read again."""
    session = Session("notebook:main")
    seen = []

    def step(*ids: str) -> list[str]:
        reply = _reply(*ids)
        m.unique_call_ids(reply, session.history, session.call_ids)
        session.history.append(reply)
        seen.extend(_ids(reply))
        return _ids(reply)

    assert step("call_0", "call_1") == ["call_0", "call_1"]
    renamed = step("call_0", "call_2", "call_2")  # a backend numbering per reply, and a repeat within one
    assert renamed[1] == "call_2" and len(set(seen)) == len(seen) == 5
    session.history[0] = _reply("call_9")  # replaced by another dict: call_0 is free again, call_9 is taken
    assert step("call_0", "call_9")[0] == "call_0" and step("call_9")[0] != "call_9"
    del session.history[1:]  # pruned
    assert step("call_1") == ["call_1"]
    session.history[:] = [session.history[1], session.history[0]]  # reordered: read again, nothing forgotten
    assert step("call_1")[0] != "call_1" and step("call_9")[0] != "call_9"
    fresh = Session("notebook:other")  # no cache at all: the whole history each time
    fresh.history = list(session.history)
    reply = _reply(*_ids(session.history[0]))
    m.unique_call_ids(reply, fresh.history)
    assert not set(_ids(reply)) & {i for msg in fresh.history for i in _ids(msg)}
