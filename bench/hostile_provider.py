"""What a hostile model provider costs the process, against a plain small reply measured in the same run.

    python bench/hostile_provider.py [--bomb-mb 300] [--line-mb 48] [--total-timeout 5]

A lying server on loopback (cireil.testing.lying_llm) answers one model call at a time through the real
provider client (engine/httpcall.py, the [limits] of config/cireil.toml at their defaults, except the total
time, shortened so the endless stream ends within the run). For each answer the bench prints the peak growth
of the process's resident memory over its level just before the call (VmHWM after resetting it through
/proc/self/clear_refs; tracemalloc's peak where that is refused), the wall time, and how the call ended.
The baseline is a plain respond call of a few hundred bytes. Target: every hostile answer ends with a
ProviderError naming its limit, and memory grows by less than 64 MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import re
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cireil.runtime.config.cireil_config import DEFAULT_LIMITS, Limits
from cireil.runtime.config.engine_config import ProviderConfig
from cireil.runtime.engine.openai import ModelRequest, OpenAIProvider
from cireil.testing.lying_llm import LyingLLM, answers

BOUND_MIB = 64
TOOLS = [{"name": "respond", "description": "Say it.", "parameters": {"type": "object", "properties": {}}}]


def call(url: str, limits: Limits) -> object:
    async def main() -> object:
        provider = OpenAIProvider(ProviderConfig("liar", api_base=url, default_model="m"), "m")
        provider.limits = limits
        try:
            return await provider.complete(ModelRequest("sys", [], TOOLS, "bench", "m"))
        except Exception as exc:
            return exc
        finally:
            await provider.aclose()

    return asyncio.run(main())


def _hwm_kib() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def measured(action: Callable[[], object]) -> tuple[float, float, object]:
    """(peak memory growth in MiB, seconds, result)."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
        base, traced = _hwm_kib(), False
    except OSError:
        tracemalloc.start()
        base, traced = 0, True
    started = time.perf_counter()
    result = action()
    seconds = time.perf_counter() - started
    if traced:
        grown = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    else:
        grown = (_hwm_kib() - base) / 1024
    return grown, seconds, result


def ended(result: object) -> str:
    if isinstance(result, Exception):
        text = str(result)
        setting = re.search(r"limits\.\w+", text)
        return f"{type(result).__name__} ({setting.group(0) if setting else f'a message of {len(text)} characters'})"
    return "a reply"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bomb-mb", type=int, default=300)
    parser.add_argument("--line-mb", type=int, default=48)
    parser.add_argument("--total-timeout", type=float, default=5.0)
    opts = parser.parse_args()
    limits = replace(DEFAULT_LIMITS, total_timeout_s=opts.total_timeout)
    cases = [
        ("plain small reply (baseline)", answers.events()),
        (f"gzip bomb, JSON ({opts.bomb_mb} MB decoded)", answers.gzip_bomb(opts.bomb_mb)),
        (f"gzip bomb, SSE ({opts.bomb_mb} MB line)", answers.gzip_bomb(opts.bomb_mb, stream=True)),
        (f"{opts.line_mb} MB SSE line, no newline", answers.endless_line(opts.line_mb)),
        (f"endless stream ({opts.total_timeout:g} s limit)", answers.endless_stream()),
        ("60 MB error body", answers.huge_error(60)),
    ]
    rows = []
    with LyingLLM() as liar:
        call(liar.base_url, limits)  # imports and the first connection, outside every measurement
        for name, answer in cases:
            liar.answer = answer
            rows.append((name, *measured(lambda: call(liar.base_url, limits))))
    base_mib, base_s = max(rows[0][1], 0.25), rows[0][2]
    print(f"{'answer':40} {'peak memory':>12} {'x baseline':>10} {'time':>9}  ended with")
    ok = True
    for name, grown, seconds, result in rows:
        print(f"{name:40} {grown:9.1f} MiB {grown / base_mib:9.1f}x {seconds:8.2f}s  {ended(result)}")
        if name != rows[0][0]:
            ok = ok and grown < BOUND_MIB and isinstance(result, Exception)
    print(f"(baseline: {rows[0][1]:.1f} MiB, {base_s * 1000:.1f} ms; ratios use max(baseline, 0.25 MiB))")
    print(f"target (< {BOUND_MIB} MiB each, every hostile answer an error) {'met' if ok else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
