"""Local names of remote tools: mcp__<server>__<tool>, safe for every model API."""

from __future__ import annotations

import re

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def local_name(server: str, remote: str) -> str:
    return f"mcp__{server}__{_UNSAFE.sub('_', remote)}"
