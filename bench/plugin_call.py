"""Per-call overhead of a JS plugin tool (the original's contract, one warm Node worker) against a Python tool.

    python bench/plugin_call.py [--calls 500]

Both tools do the same nothing (return their argument) and are called through the whole tool path
(`agent.call`: validation, result dict, runtime thread hop), interleaved call by call so that machine noise hits
both alike. The plugin call adds: JSON to the worker's stdin, its event loop, JSON back on its pipe, the reader
thread's hop to the runtime loop. A third row calls a plugin tool that asks cireil for one host service
(cfg.globalPlugin) to show a callback's cost. Target: the plugin's median under 5 ms per call once warm.
Needs Node >= 22 (found as the product finds it, else the peer tests' install) and valibot beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(_TESTS), str(_TESTS / "runtime" / "plugins")]  # originalkit, conftest; jskit

from jskit import JsKit  # noqa: E402

import cireil  # noqa: E402
from cireil import Tool  # noqa: E402
from cireil.params import Params, String  # noqa: E402
from cireil.runtime.plugins import jsplugins  # noqa: E402

TOOLS = """\
"js-echo": {
  description: "Echo.",
  parameters: vb.object({ text: vb.string() }),
  async execute(input) { return { success: true, text: input.text }; },
},
"js-config": {
  description: "Echo after asking cireil for its config.",
  parameters: vb.object({ text: vb.string() }),
  async execute(input, ctx) { await ctx.cfg.globalPlugin("bench"); return { success: true, text: input.text }; },
},
"""


async def py_echo(args: dict, ctx: object) -> dict:
    return {"success": True, "text": args["text"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    n = parser.parse_args().calls

    import os

    import originalkit

    original = originalkit.install()
    kit = JsKit(node=original.node, checkout=original.checkout)
    os.environ.setdefault("CIREIL_NODE", str(kit.node))
    os.environ.setdefault("CIREIL_PLUGIN_MODULES", str(kit.modules))
    with tempfile.TemporaryDirectory() as tmp:
        tools = "js-echo = true\njs-config = true\npy-echo = true\n"
        agent = kit.root(Path(tmp), '[[plugins]]\nname = "bench"\n', tools)
        kit.plugin(agent, "bench", TOOLS)
        py = Tool("py-echo", "Echo.", Params(text=String()), py_echo)
        started = time.perf_counter()
        loaded = cireil.load(agent, tools=[py])
        load_s = time.perf_counter() - started
        for name in ("js-echo", "js-config", "py-echo"):  # warm: the worker, caches, the runtime thread
            for _ in range(20):
                assert loaded.call(name, text="x").success
        times: dict[str, list[float]] = {"js-echo": [], "js-config": [], "py-echo": []}
        for i in range(n):
            for name in times:
                t = time.perf_counter()
                result = loaded.call(name, text=str(i))
                times[name].append(time.perf_counter() - t)
                assert result["text"] == str(i)
        jsplugins.shutdown()
    med = {name: statistics.median(v) * 1000 for name, v in times.items()}
    print(f"load (Node start, plugin import, manifest): {load_s * 1000:.0f} ms")
    print(f"{n} calls each, median per call:")
    print(f"  Python tool               {med['py-echo']:.3f} ms")
    print(f"  JS plugin tool            {med['js-echo']:.3f} ms  (+{med['js-echo'] - med['py-echo']:.3f} ms)")
    print(f"  JS plugin + one service   {med['js-config']:.3f} ms  (+{med['js-config'] - med['py-echo']:.3f} ms)")
    verdict = "met" if med["js-echo"] < 5 else "MISSED"
    print(f"target: plugin tool median < 5 ms: {verdict}")


if __name__ == "__main__":
    main()
