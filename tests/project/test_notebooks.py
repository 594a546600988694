"""Every tutorial under notebooks/ executes from top to bottom with nbclient, as CI's main job does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conftest import REPO

NOTEBOOKS = REPO / "notebooks"
_spec = importlib.util.spec_from_file_location("run_notebooks", NOTEBOOKS / "run.py")
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)

TUTORIALS = sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))


def test_there_are_tutorials():
    assert any(p.name == "01-getting-started.ipynb" for p in TUTORIALS)


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_executes(path: Path):
    ok, detail = run_notebooks.execute(path)
    assert ok, f"{path.name}: {detail}"
