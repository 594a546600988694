"""Execute every tutorial notebook headlessly and report: the main job without a browser.

    python notebooks/run.py [--out DIR] [NOTEBOOK ...]

One line per notebook, then a summary; a failed notebook also gets the cell that failed, its error and
what its kernel logged. Everything else the kernel and the Jupyter machinery print (the "running over TCP
without encryption" warning of every kernel, library warnings) is kept out of the report. Executed copies
go to test-output/notebooks/ (or DIR) so the originals stay clean; the exit status is non-zero when any
cell of any notebook fails.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "test-output" / "notebooks"

# what every kernel says on start whatever the notebook does: not worth a line of the report
_KERNEL_NOISE = re.compile(r"Kernel is running over TCP without encryption")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LOG_LINES = 20  # of a failed notebook's kernel log, the last lines shown


def execute(path: Path, timeout: int = 300, out: Path = OUT) -> tuple[bool, str]:
    """Run one notebook; (True, "N code cells") or (False, what failed, over one or more lines)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}})
    # the kernel process writes to the terminal directly; its output is read back only when the notebook fails
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as log:
        try:
            with warnings.catch_warnings():  # jupyter_client/zmq deprecation chatter, not the notebook's
                warnings.simplefilter("ignore")
                client.execute(stdout=log, stderr=log)
            ok, detail = True, f"{sum(c.cell_type == 'code' for c in nb.cells)} code cells"
        except CellExecutionError as exc:
            ok, detail = False, f"{_failed_cell(nb)}{exc.ename}: {_ANSI.sub('', exc.evalue)}"
        except Exception as exc:  # the kernel died, or a cell ran past the timeout: said, not a traceback
            ok, detail = False, f"{type(exc).__name__}: {_ANSI.sub('', str(exc)).strip()}"
        if not ok:
            detail += _kernel_log(log)
    out.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out / path.name)
    return ok, detail


def _failed_cell(nb: nbformat.NotebookNode) -> str:
    """Which cell stopped the run, as `code cell N (its first line): ` (N counts code cells only)."""
    number = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        number += 1
        expected = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        if not expected and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            return f"code cell {number} ({first[:60]}): "
    return ""


def _kernel_log(log: object) -> str:
    log.seek(0)  # type: ignore[attr-defined]
    lines = [_ANSI.sub("", line.rstrip()) for line in log.read().splitlines()]  # type: ignore[attr-defined]
    kept = [line for line in lines if line.strip() and not _KERNEL_NOISE.search(line)]
    if not kept:
        return ""
    return "\n  kernel log:\n" + "\n".join(f"    {line}" for line in kept[-_LOG_LINES:])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="notebooks/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="default: every notebooks/[0-9]*.ipynb")
    parser.add_argument("--out", type=Path, default=OUT, metavar="DIR", help=f"executed copies (default {OUT})")
    args = parser.parse_args(argv)
    paths = [Path(a) for a in args.notebooks] or sorted(HERE.glob("[0-9]*.ipynb"))
    if not paths:
        print("no tutorial notebooks found", file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        started = time.perf_counter()
        ok, detail = execute(path, out=args.out)
        failed += not ok
        took = f"{time.perf_counter() - started:.1f}s"
        if ok:
            print(f"ok   {path.name}  ({detail}, {took})", flush=True)
        else:
            print(f"FAIL {path.name}  ({took}): {detail}", flush=True)
    print(f"tutorials: {len(paths) - failed} passed, {failed} failed; executed copies in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
