"""pytest fixtures: real SDK servers in each mode, the rogue server, and agents wired to them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .launch import sdk_server
from .rogue import Rogue

MODES = {
    "sse-stateful": (),
    "json-stateful": ("--json",),
    "sse-stateless": ("--stateless",),
    "json-stateless": ("--json", "--stateless"),
}


@pytest.fixture(scope="session")
def mcp_marker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "cancelled.txt"


@pytest.fixture(scope="session", params=list(MODES))
def sdk_url(request: pytest.FixtureRequest, mcp_marker: Path) -> Iterator[str]:
    """The SDK server in every response mode and session mode."""
    with sdk_server(*MODES[request.param], "--marker", f"{mcp_marker}.{request.param}") as url:
        yield url


@pytest.fixture(scope="session")
def sdk_sse(mcp_marker: Path) -> Iterator[str]:
    with sdk_server("--marker", str(mcp_marker)) as url:
        yield url


@pytest.fixture(scope="session", params=["sse", "json"])
def sdk_recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A stateful SDK server that records every request it receives: (url, the JSON-lines record)."""
    record = tmp_path_factory.mktemp("wire") / "requests.jsonl"
    flags = ("--json",) if request.param == "json" else ()
    with sdk_server(*flags, "--record", str(record)) as url:
        yield url, record


@pytest.fixture(scope="session")
def rogue() -> Iterator[Rogue]:
    server = Rogue()
    yield server
    server.stop()
