"""The turn loop's own cost per step, against the model round trip measured in the same run.

    python bench/turn.py [--steps 50] [--turns 5]

A copy of the demo agent talks to a scripted OpenAI-compatible server on loopback that answers at
once: 49 steps calling session-info (a tool that costs nearly nothing), then a final respond. Each
step's wall time is split into the provider call (request building, network, streaming parse), the
tool calls, and the rest: assembling the prompt, shaping history, committing to sessions.db, events.
The baseline is the bare round trip: the very same request bodies POSTed through one httpx.AsyncClient and
read to the end, so "runtime overhead" = step time - bare round trip - tool time.
Target: runtime overhead under 5 ms median per step.

The turn recorder (runtime/recorder) is measured in the same run: its own time per step, clocked
inside its event tap (hashing new messages, the SQLite write), and the same turns run with recording
paused, step time against step time. Target: under 1 ms per step. Then the last recorded 50-step
turn is replayed offline (agent.replay: a throwaway copy, the recorded replies from ScriptedLLM, tools
for real). Target: under 2 s plus the replay's own tool time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

import cireil
from cireil.runtime.scaffold import init
from cireil.testing.scripted_llm import ScriptedLLM, reply

ENGINE = """\
[local]
apiBase = "{base}"
defaultModel = "scripted"
isGlobalDefault = true
"""


def scripted(steps: int):
    def answer(body: dict):
        calls = sum(1 for m in body["messages"] if m["role"] == "tool")
        if calls >= steps - 1:
            return reply.tool_calls(("respond", {"content": "done"}))
        return reply.tool_calls(("session-info", {}))

    return answer


async def _bare_round_trips(base: str, bodies: list[dict]) -> list[float]:
    """The baseline: the same bodies through one httpx.AsyncClient, read to the end, nothing around them."""
    times = []
    async with httpx.AsyncClient(timeout=60) as client:
        for body in [bodies[0], *bodies]:  # the first one warms the connection up
            t = time.perf_counter()
            async with client.stream("POST", f"{base}/chat/completions", json=body) as response:
                async for _ in response.aiter_bytes():
                    pass
            times.append(time.perf_counter() - t)
    return times[1:]


def ms(values: list[float]) -> str:
    p90 = sorted(values)[int(len(values) * 0.9)]
    return f"median {statistics.median(values) * 1000:7.2f} ms  p90 {p90 * 1000:7.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM(default=scripted(opts.steps)) as llm:
        agent_dir = init(Path(tmp) / "wren")
        (agent_dir / "config" / "engine.toml").write_text(ENGINE.format(base=llm.base_url))
        agent = cireil.load(agent_dir)
        agent.turn("warm up")  # imports, first connection, first SQLite pages
        tap_time = _clock_the_recorder()
        steps: list[dict] = []
        unrecorded: list[dict] = []
        first_request = len(llm.requests)
        started = time.perf_counter()
        for n in range(opts.turns):
            outcome = agent.turn(f"run {n}", session=f"notebook:bench-{n}")
            assert outcome.steps == opts.steps, outcome.steps
            steps += outcome.timings
        wall = time.perf_counter() - started
        bodies = [r.body for r in llm.requests[first_request:]]
        recorded_steps = len(steps)
        agent.recording.paused = True  # the same turns again, unrecorded: the A/B baseline
        for n in range(opts.turns):
            unrecorded += agent.turn(f"run {n}", session=f"notebook:bench-off-{n}").timings
        agent.recording.paused = False
        recorded_turn = agent.turns(f"notebook:bench-{opts.turns - 1}")[-1]
        replayed = agent.replay(recorded_turn)
        assert replayed.model_calls == opts.steps, replayed.summary()
        agent.close()

        bare = asyncio.run(_bare_round_trips(llm.base_url, bodies))

    bare_median = statistics.median(bare)
    totals = [s["total"] for s in steps]
    tools = [s["tools"] for s in steps]
    provider = [s["model"] for s in steps]
    overhead = [s["total"] - s["tools"] - bare_median for s in steps]
    outside_provider = [s["total"] - s["tools"] - s["model"] for s in steps]
    print(f"{opts.turns} turns x {opts.steps} steps ({len(steps)} steps, {wall:.2f} s wall)")
    print(f"  step, all in           {ms(totals)}")
    print(f"  bare HTTP round trip   {ms(bare)}   (baseline: same bodies, bare httpx.AsyncClient)")
    print(f"  provider call          {ms(provider)}   ratio to bare {statistics.median(provider) / bare_median:.2f}x")
    print(f"  tool calls             {ms(tools)}")
    print(f"  outside the provider   {ms(outside_provider)}   (assembly, history, sessions.db, events)")
    print(f"  runtime overhead       {ms(overhead)}   = step - bare round trip - tools; target < 5 ms median")
    ok = statistics.median(overhead) < 0.005
    print("target met" if ok else "target missed")
    on = statistics.median(s["total"] - s["tools"] for s in steps)
    off = statistics.median(s["total"] - s["tools"] for s in unrecorded)
    print("turn recorder")
    print(f"  recorder's own time    {sum(tap_time) / recorded_steps * 1000:7.3f} ms per step (clocked in its tap)")
    print(f"  step - tools, recorded {on * 1000:7.2f} ms median   unrecorded {off * 1000:7.2f} ms median")
    print(f"  difference             {(on - off) * 1000:+7.3f} ms per step   (noisy: two runs of the same turns)")
    rec_ok = sum(tap_time) / recorded_steps < 0.001
    print("recorder target (< 1 ms per step) met" if rec_ok else "recorder target (< 1 ms per step) missed")
    replay_rest = replayed.seconds - replayed.tool_seconds
    print("replay")
    print(f"  {replayed.summary()}")
    split = f"{replay_rest:.2f} s + {replayed.tool_seconds:.2f} s tools"
    print(f"  replay of a {opts.steps}-step turn  {replayed.seconds:.2f} s = {split}")
    print(
        "replay target (< 2 s plus tool time) met" if replay_rest < 2 else "replay target (< 2 s plus tool time) missed"
    )
    return 0


def _clock_the_recorder() -> list[float]:
    """Time spent in the recorder's event tap, summed; the list's one element grows as turns run."""
    from cireil.runtime.recorder import recording

    spent = [0.0]
    original = recording.TurnTap._record

    def clocked(self: recording.TurnTap, event: dict) -> None:
        t = time.perf_counter()
        try:
            original(self, event)
        finally:
            spent[0] += time.perf_counter() - t

    recording.TurnTap._record = clocked  # type: ignore[method-assign]
    return spent


if __name__ == "__main__":
    sys.exit(main())
