"""Copying an agent directory (replays, eval variants) without cireil's working folders.

`.cireil/tmp` holds writes in progress and `.cireil/exec` the work folders of running commands'
overlays (exec/anon_mounts.py, with a mode-000 folder inside that copytree cannot read): neither means
anything in a copy.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

WORKING = (".cireil/tmp", ".cireil/exec")


def copy_agent_tree(source: Path, target: Path, left_behind: tuple[str, ...]) -> Path:
    """Copy `source` to `target` (symlinks stay links), leaving out names matching `left_behind` at
    any depth and cireil's working folders at the top."""
    shutil.copytree(source, target, symlinks=True, ignore=_ignore(source, left_behind))
    return target


def _ignore(root: Path, left_behind: tuple[str, ...]) -> Callable[[str, list[str]], set[str]]:
    by_name = shutil.ignore_patterns(*left_behind)
    working = {os.path.normpath(os.path.join(root, part)) for part in WORKING}

    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = set(by_name(directory, names))
        skipped.update(n for n in names if os.path.normpath(os.path.join(directory, n)) in working)
        return skipped

    return ignore
