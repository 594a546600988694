"""`%cireil recordings`: recorded turns, notebook and production, each with where it came from (a production turn
rebuilt from sessions.db, attach/reconstruct.py, says "reconstructed")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NOTEBOOK = "notebook"


def source_of(turn: Any) -> str:
    """Where a recorded turn came from: the running original (via the proxy), a fork, or a notebook turn."""
    origin = turn.origin if isinstance(getattr(turn, "origin", None), dict) else {}
    production = origin.get("production")
    if isinstance(production, dict):
        where = production.get("platform") or production.get("kind") or "?"
        if isinstance(origin.get("reconstructed"), dict):  # rebuilt from sessions.db: never the bytes sent
            return f"reconstructed ({where}, from sessions.db; requests rebuilt, not as sent)"
        return f"production ({where}, {production.get('provider', '?')} via proxy)"
    if "turn" in origin:
        return f"fork of turn {origin.get('turn')} step {origin.get('step')}"
    return NOTEBOOK


def is_production(turn: Any) -> bool:
    origin = getattr(turn, "origin", None)
    return isinstance(origin, dict) and isinstance(origin.get("production"), dict)


def rows(turns: Iterable[Any], *, production: bool = False, limit: int = 30) -> list[tuple[str, ...]]:
    """(turn, when, session, source, steps, ended, tokens in/out, message) per turn, newest last."""
    chosen = [t for t in turns if is_production(t) or not production][-limit:] if limit else []
    out = []
    for t in chosen:
        usage = t.usage or {}
        tokens = f"{usage.get('prompt_tokens', '-')}/{usage.get('completion_tokens', '-')}"
        text = " ".join(t.text.split())
        out.append((str(t.id), t.when, t.session_id, source_of(t), str(t.step_count), t.ended, tokens, text[:48]))
    return out


HEADER = ("turn", "when", "session", "from", "steps", "ended", "tokens in/out", "message")


def table(turns: Iterable[Any], *, production: bool = False, limit: int = 30) -> str:
    found = rows(turns, production=production, limit=limit)
    if not found:
        return "no recorded production turns" if production else "no recorded turns"
    widths = [max(len(r[i]) for r in [HEADER, *found]) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [HEADER, *found]]
    return "\n".join(lines)
