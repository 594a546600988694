"""Persistent sessions: the SQLite store and the matching behind query-sessions."""

from __future__ import annotations

from .store import SessionStore

__all__ = ["SessionStore"]
