"""Tests that run the original CireilClaw itself (tests/originalkit.py): the `original` fixture."""

from __future__ import annotations

import pytest

import originalkit

# the first test to ask for the original may install it (Node, pnpm, a native build): more than the suite's
# 300 s per-test default on a slow registry; a cached install starts in seconds
INSTALL_TIMEOUT = 1200


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "original" in getattr(item, "fixturenames", ()) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(INSTALL_TIMEOUT))


@pytest.fixture(scope="session")
def original() -> originalkit.Original:
    """The original CireilClaw, installed once into its cache; tests skip with the reason where it cannot be."""
    try:
        return originalkit.install()
    except originalkit.OriginalUnavailable as exc:
        pytest.skip(f"the original CireilClaw is not available here: {exc}")
