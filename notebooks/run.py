"""Execute every tutorial notebook headlessly and report: the main job without a browser.

    python notebooks/run.py [NOTEBOOK ...]

Executed copies go to test-output/notebooks/ so the originals stay clean; the exit status is
non-zero when any cell of any notebook fails.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "test-output" / "notebooks"


def execute(path: Path, timeout: int = 300) -> tuple[bool, str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(HERE)}})
    try:
        client.execute()
        ok, detail = True, f"{sum(c.cell_type == 'code' for c in nb.cells)} code cells"
    except CellExecutionError as exc:
        ok, detail = False, str(exc).strip().splitlines()[-1]
    OUT.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, OUT / path.name)
    return ok, detail


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(HERE.glob("[0-9]*.ipynb"))
    if not paths:
        print("no tutorial notebooks found", file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        started = time.perf_counter()
        ok, detail = execute(path)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {path.name}  ({detail}, {time.perf_counter() - started:.1f}s)")
    print(f"executed copies in {OUT}")
    print(f"tutorials: {len(paths) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
