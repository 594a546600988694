"""The original CireilClaw running, attached, its own scheduler firing a cron job: a notebook kernel's
`%cireil watch` shows the turn while the original is still in it and updates the same display when it ends;
the turn is listed as production, forks from a chosen step offline, and interrupting (then killing) the kernel
leaves the original's turn and the proxy alone."""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import cireil
from attachkit import attached_root
from cireil.runtime.attach.listing import source_of
from cireil.testing.scripted_llm import ScriptedLLM, reply
from kernelharness import Kernel
from originalkit import Original

# how long the original's second model call waits for its reply: the window in which the turn is running
HELD = 6.0


def cron_at(moment: datetime) -> str:
    """A one-shot main job the original's own scheduler fires at `moment` (cron.toml's `at`)."""
    return (
        "[[jobs]]\n"
        'id = "tidy"\n'
        'prompt = "Tidy the notes."\n'
        'execution = "main"\n'
        'target = "internal:ops"\n'
        'delivery = "none"\n'
        f'schedule = {{ at = "{moment.strftime("%Y-%m-%dT%H:%M:%SZ")}" }}\n'
    )


def test_a_cron_turn_of_the_running_original_is_watched_live_then_forked(original: Original, tmp_path: Path):
    home = tmp_path / "home"
    with (
        ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm,
        attached_root(original, home, "Watched Agent", llm) as agent_dir,
    ):
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_notes")),
            reply.tool_calls(("no-response", {}, "call_quiet"), delay=HELD),
        )
        kernel = Kernel(cwd=tmp_path)
        try:
            with original.start(home) as peer:
                kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
                watching = kernel.submit("%cireil watch")
                kernel.wait_started(watching)
                # the job fires from the original's own scheduler, not from the driver: `run` reloads it when
                # cron.toml changes; a few seconds ahead, or the scheduler skips a one-shot job already past
                fires = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=8)
                (agent_dir / "config" / "cron.toml").write_text(cron_at(fires))
                first = kernel.wait_for_display(watching, "display_data", "production turn", timeout=90)
                shown_at = time.monotonic()
                text = first["content"]["data"]["text/plain"]
                assert "· internal:ops ·" in text and "1 model calls · running" in text
                assert "“Tidy the notes.”" in text and "step 1 · " in text
                update = kernel.wait_for_display(watching, "update_display_data", "ended: no-response", timeout=60)
                assert update["content"]["transient"]["display_id"] == first["content"]["transient"]["display_id"]
                assert time.monotonic() - shown_at > HELD / 2  # shown while running, not after the fact
                assert "2 model calls" in update["content"]["data"]["text/plain"]
                kernel.interrupt()
                run = kernel.collect(watching, timeout=30)
                assert run.status == "ok" and run.error is None
                assert run.stdout.strip().splitlines()[-1] == "watch stopped: 1 production turn(s) shown"

                listed = kernel.run("%cireil recordings --production").stdout
                assert "internal:ops" in listed and "production" in listed

                # a kernel killed while the original works: its next turn goes through the proxy all the same
                kernel.km.signal_kernel(signal.SIGKILL)
                llm.script(reply.tool_calls(("no-response", {}, "call_after")))
                assert peer.turn("internal:ops", "Anything else?")["ok"] is True
                peer.flush()
        finally:
            kernel.shutdown()

    agent = cireil.load(agent_dir)
    try:
        production = [t for t in agent.turns("internal:ops") if source_of(t).startswith("production")]
        assert [t.text for t in production] == ["Tidy the notes.", "Anything else?"]
        tidy = production[0]
        assert [s.tool_calls[0]["name"] for s in tidy.steps] == ["read", "no-response"]
        served = len(llm.requests)
        # forked from its first step with another file content, in a notebook session, offline
        forked = agent.fork(tidy, 1, result={"success": True, "content": "one\ntwo\nthree\n"})
        assert forked.ended == "no-response" and forked.steps == 2
        assert len(llm.requests) == served
        (turn,) = agent.turns(forked.session_id)
        assert turn.origin == {"turn": tidy.id, "step": 1, "session": "internal:ops"}
        assert "three" in json.dumps(turn.steps[1].request)
        assert "Tidy the notes." in json.dumps(turn.steps[0].request)
    finally:
        agent.close()
