"""What assembling one model call costs as a turn loop grows (reference §7): prompt, history, metadata.

    python bench/assemble.py [--steps 50] [--rounds 5]

A demo agent with two open files runs a simulated turn of `--steps` model calls; each step adds an
assistant message with two tool calls (a read of a 9 KB file and an exec) and their results to a
history that already holds 40 earlier turns. Every step assembles the request as the turn loop does,
with one TokenCache kept across steps. Printed: the median and worst per-step time, and the same
with a fresh cache every step, so the ratio shows what the cache saves. Target: median < 5 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cireil.runtime import scaffold
from cireil.runtime.engine.assemble import assemble
from cireil.runtime.engine.history import TokenCache
from cireil.runtime.files.layout import AgentLayout
from cireil.runtime.files.paths import SandboxPaths
from cireil.runtime.sessions import messages as m
from cireil.runtime.sessions.state import Session

TARGET_MS = 5.0


@dataclass
class Model:
    context_window: int | None = 200_000
    context_budget: float = 0.6
    context_hard_budget: float = 0.85
    max_images_per_request: int | None = None
    supports_vision: bool = True
    supports_video: bool = False


def _step(i: int) -> list[dict]:
    read_id, exec_id = f"r{i}", f"e{i}"
    return [
        m.assistant_message(
            [
                {"type": "thinking", "thinking": "Let me look at the file and run the report. " * 4},
                {"type": "toolCall", "id": read_id, "name": "read", "input": {"path": f"/workspace/f{i % 7}.md"}},
                {"type": "toolCall", "id": exec_id, "name": "exec", "input": {"command": "python report.py"}},
            ]
        ),
        m.tool_response(read_id, "read", {"content": "line of text\n" * 700, "path": f"/workspace/f{i % 7}.md"}),
        m.tool_response(exec_id, "exec", {"exitCode": 0, "stdout": "ok\n" * 200, "success": True}),
    ]


def _session() -> Session:
    session = Session("notebook")
    for t in range(40):
        session.history += [
            m.user_message(f"question {t} " * 20),
            m.assistant_message([{"type": "text", "text": f"answer {t} " * 40}]),
        ]
    session.history.append(m.user_message("Please update the handbook."))
    session.opened_files += ["/workspace/notes.txt", "/workspace/README.md"]
    return session


def run(agent: Path, steps: int, shared_cache: bool) -> list[float]:
    layout, paths, model = AgentLayout.find(agent), SandboxPaths(agent), Model()
    session = _session()
    cache = TokenCache()
    times = []
    for i in range(steps):
        session.history += _step(i)
        started = time.perf_counter()
        result = assemble(
            layout=layout,
            session=session,
            paths=paths,
            model_cfg=model,
            token_cache=cache if shared_cache else TokenCache(),
        )
        session.cursor = result.cursor
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        agent = scaffold.init(Path(tmp) / "agent")
        cached: list[float] = []
        fresh: list[float] = []
        for _ in range(args.rounds):
            cached += run(agent, args.steps, True)
            fresh += run(agent, args.steps, False)
    median, fresh_median = statistics.median(cached), statistics.median(fresh)
    print(f"per step, cache kept:   median {median:.2f} ms, worst {max(cached):.2f} ms")
    print(f"per step, cache fresh:  median {fresh_median:.2f} ms, worst {max(fresh):.2f} ms")
    print(f"cache speed-up: {fresh_median / median:.1f}x; target median < {TARGET_MS} ms")
    return 0 if median < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
