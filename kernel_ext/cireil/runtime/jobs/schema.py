"""How a file shared with the original CireilClaw is checked against the original's strict schema.

cron.toml and heartbeat.toml run in cireil only when they pass the original's schema (config.py and
heartbeat.py declare it), so the report those checks fill lives here, with the jobs; original/unhonoured.py
reports every file the original reads (these two among them) through the same report, as warnings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import params
from ..config.checker import Checker, label
from ..config.tomlsource import TomlSource

REFUSES = "the original CireilClaw refuses this file: "
# the original's shortest interval, for cron.toml's `every` and heartbeat.toml's `interval` alike
SECONDS = params.Integer(minimum=60, description="a whole number of seconds")


class Report(Checker):
    """Warnings for one file: schema problems say the original refuses it; notes say what cireil does."""

    def __init__(self, source: TomlSource) -> None:
        super().__init__(source, severity="warning", prefix=REFUSES)
        self.out = self.issues

    def refuse(self, path: tuple, message: str) -> None:
        self.fail(path, message)

    def note(self, path: tuple, message: str) -> None:
        self.out.append(self.source.issue(path, message, "warning"))

    def unknown(self, table: Any, allowed: Sequence[str], where: tuple = (), **hints: str) -> list[str]:
        return super().unknown(table, allowed, where, **hints) if isinstance(table, dict) else []

    def text(self, table: dict, key: str, where: tuple, *, required: bool = False) -> None:
        if key not in table:
            if required:
                self.refuse(where, f"'{label(*where, key)}' is required")
            return
        self.value((*where, key), table[key], params.String(min_length=1))

    def choice(self, table: dict, key: str, where: tuple, values: tuple[str, ...]) -> None:
        if key in table:
            self.value((*where, key), table[key], params.String(enum=values))

    def flag(self, table: dict, key: str, where: tuple) -> None:
        if key in table:
            self.value((*where, key), table[key], params.Boolean())
