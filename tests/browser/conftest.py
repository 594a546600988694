"""Fixtures for the browser tests: one JupyterLab server and one Debian chromium per run, a page per test.

The browser is the system's /usr/bin/chromium (./dev test installs it as root); Playwright's own browser
download is never used. The flags keep a root, networkless, GPU-less machine quiet.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from .lab import Lab, start_lab, stop_lab
from .labpage import LabPage

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# A notebook of our own for the live panel: the tutorial's live cell ends too quickly to watch it update.
LIVE_EXEC = "live-exec.ipynb"
LIVE_COMMAND = """%%cireil_exec python3 -
import time
for i in range(1, 4):
    print("tick", i, flush=True)
    time.sleep(1.5)"""


# And one for the palette of every tool's form (the tutorials show one tool's form only).
PALETTE = "palette.ipynb"

# And one for the layout of the tables and the context view (issue 34), each view in a cell of its own.
LAYOUT = "layout.ipynb"
LAYOUT_CELLS = (
    "%load_ext cireil\n%cireil load --demo",
    "%cireil tools",
    "%cireil help",
    "%cireil_open_file /workspace/garden-handbook.md\n%cireil context",
)


def _notebook(*sources: str) -> str:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return nbformat.writes(nb)


def _live_notebook() -> str:
    return _notebook("%load_ext cireil\n%cireil load --demo", LIVE_COMMAND)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not Path(CHROMIUM).exists() or shutil.which("bwrap") is None:
        pytest.skip("browser tests need Debian's chromium and bubblewrap (./dev test installs both as root)")
    notebooks = {
        LIVE_EXEC: _live_notebook(),
        PALETTE: _notebook("%load_ext cireil\n%cireil load --demo", "%cireil ui"),
        LAYOUT: _notebook(*LAYOUT_CELLS),
    }
    server = start_lab(tmp_path_factory.mktemp("lab"), notebooks)
    yield server
    stop_lab(server)


# Module scope, not session: Playwright's sync API keeps an event loop marked as running in this thread
# until it exits, and later tests that call asyncio.run() would fail while it lives.
@pytest.fixture(scope="module")
def browser_context(lab: Lab, tmp_path_factory: pytest.TempPathFactory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),  # a fresh --user-data-dir
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture
def console_errors() -> list[str]:
    return []


@pytest.fixture
def lab_page(browser_context, lab: Lab, console_errors: list[str]) -> Iterator[LabPage]:
    page = browser_context.new_page()
    page.on("console", lambda m: m.type == "error" and console_errors.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: console_errors.append(f"pageerror: {e}"))
    yield LabPage(page, lab)
    page.close()
