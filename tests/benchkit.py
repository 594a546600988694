"""The benchmarks under bench/ as modules, for the tests that check what they generate and drive."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py imported once (bench/ is a folder of scripts, not a package)."""
    module_name = f"bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no bench/{name}.py"
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module
