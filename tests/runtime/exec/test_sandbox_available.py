"""cireil.sandbox_available(): the cheap public check tutorials use before choosing an exec backend."""

from __future__ import annotations

import shutil

import pytest

import cireil
from cireil.runtime.exec import sandbox


@pytest.fixture
def fresh_probe():
    sandbox.reset_probe()
    yield
    sandbox.reset_probe()


def test_a_bwrap_without_namespaces_is_reported_with_its_reason(tmp_path, monkeypatch, fresh_probe):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox, "BWRAP", str(fake))
    assert cireil.sandbox_available() is False
    assert "No permissions to creating new namespace" in cireil.sandbox_problem()


def test_a_missing_bwrap_is_reported(monkeypatch, fresh_probe):
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-not-installed-here")
    assert cireil.sandbox_available() is False
    assert "not installed" in cireil.sandbox_problem()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (./dev test installs it)")
def test_a_working_bwrap_is_available(fresh_probe):
    assert cireil.sandbox_problem() is None
    assert cireil.sandbox_available() is True
