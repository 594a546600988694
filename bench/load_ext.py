"""How long `%load_ext cireil` + `%cireil load --demo` add to a fresh kernel, against a trivial cell.

    python bench/load_ext.py [--kernels 7]

Each round starts a fresh kernel, times a trivial cell (the baseline: round trip plus cell
machinery), then times the cell that loads the extension and the demo agent, both measured the
same way from the client. Prints medians and the added time; the target is at most 150 ms added.

The package is byte-compiled first, as pip does when it installs a wheel: an editable install run
with PYTHONDONTWRITEBYTECODE would otherwise compile every module from source in every kernel,
which measures the compiler, not cireil.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import sys
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

import cireil

TARGET_MS = 150.0


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=7, help="fresh kernels to measure (default 7)")
    args = parser.parse_args()
    compileall.compile_dir(Path(cireil.__file__).parent, quiet=1)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
