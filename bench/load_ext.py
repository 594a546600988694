"""How long `%load_ext cireil` + `%cireil load --demo` add to a fresh kernel, against a trivial cell.

    python bench/load_ext.py [--kernels 7]

Each round starts a fresh kernel, times a trivial cell (the baseline: round trip plus cell
machinery), then times the cell that loads the extension and the demo agent, both measured the
same way from the client. Prints medians and the added time; the target (issue 20) is at most 60 ms
added. One more kernel runs the same cell with `-X importtime` (PYTHONPROFILEIMPORTTIME): the
modules the cell imports, the ten costliest by their own time and by their subtree, are printed, and
any network/TLS module among them is named.

The package is byte-compiled first, as pip does when it installs a wheel: an editable install run
with PYTHONDONTWRITEBYTECODE would otherwise compile every module from source in every kernel,
which measures the compiler, not cireil.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

import cireil

TARGET_MS = 60.0
NETWORK = ("ssl", "httpx", "httpcore", "h11", "anyio", "certifi", "mcp", "socket", "urllib.request")


def timed(kc, code: str) -> float:
    started = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
    elapsed = time.perf_counter() - started
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {reply['content'].get('ename')}: {reply['content'].get('evalue')}")
    return elapsed * 1000


def one_round() -> tuple[float, float]:
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        timed(kc, "pass")  # the first cell pays one-off kernel warm-up for both measurements alike
        trivial = timed(kc, "x = 1")
        load = timed(kc, "%load_ext cireil\n%cireil load --demo")
        return trivial, load
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def import_profile() -> list[tuple[int, int, int, str]]:
    """(self us, cumulative us, depth, module) of every import the loading cell makes, in a fresh kernel."""
    with tempfile.TemporaryFile("w+") as err:
        env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
        km, kc = start_new_kernel(kernel_name="python3", env=env, stderr=err)
        try:
            timed(kc, "import os; os.write(2, b'@@cireil-start@@\\n')")
            timed(kc, "%load_ext cireil\n%cireil load --demo\nimport os; os.write(2, b'@@cireil-end@@\\n')")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        err.seek(0)
        text = err.read()
    segment = text.split("@@cireil-start@@", 1)[-1].split("@@cireil-end@@", 1)[0]
    rows = []
    for line in segment.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), len(m.group(3)) // 2, m.group(4)))
    return rows


def print_imports(rows: list[tuple[int, int, int, str]]) -> None:
    total = sum(r[0] for r in rows)
    print(f"imports made by the cell (-X importtime): {len(rows)} modules, {total / 1000:.1f} ms (own time, summed)")
    print("  top 10 by own time:      " + ", ".join(f"{m} {s / 1000:.1f}" for s, _c, _d, m in sorted(rows)[::-1][:10]))
    outer = [r for r in rows if r[2] == min((x[2] for x in rows), default=0)]
    ranked = sorted(outer, key=lambda r: -r[1])[:10]
    print("  top 10 subtrees (ms):    " + ", ".join(f"{m} {c / 1000:.1f}" for _s, c, _d, m in ranked))
    network = sorted({m for *_x, m in rows if m.split(".")[0] in NETWORK or m in NETWORK})
    print(f"  network/TLS modules imported: {', '.join(network) or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=7, help="fresh kernels to measure (default 7)")
    args = parser.parse_args()
    # the demo agent's own files (its workspace script, its eval checks) are an agent's, not cireil's modules
    compileall.compile_dir(Path(cireil.__file__).parent, quiet=1, rx=re.compile(r"[/\\]demo[/\\]"))
    trivial, load = [], []
    for _ in range(args.kernels):
        t, lo = one_round()
        trivial.append(t)
        load.append(lo)
    base, full = statistics.median(trivial), statistics.median(load)
    added = full - base
    print(f"fresh kernels:                       {args.kernels}")
    print(f"trivial cell (baseline), median:     {base:8.1f} ms")
    print(f"%load_ext + %cireil load --demo:     {full:8.1f} ms")
    print(f"added by cireil, median:             {added:8.1f} ms  (target <= {TARGET_MS:.0f} ms)")
    print(f"ratio to the trivial cell:           {full / base:8.1f}x")
    print(f"verdict: {'within target' if added <= TARGET_MS else 'OVER TARGET'}")
    print_imports(import_profile())
    return 0


if __name__ == "__main__":
    sys.exit(main())
