"""What can go wrong with sessions.db, each said in one line naming the file or the session."""

from __future__ import annotations


class SessionStoreError(RuntimeError):
    """sessions.db as a whole cannot be used (corrupt, locked, another schema); one line, names the file."""


class SessionError(RuntimeError):
    """One session cannot be read or written; one line naming the session. Nothing was changed."""


class SessionFormatError(SessionError):
    pass


class SessionConflict(SessionError):
    pass


class SessionReadOnly(SessionError):
    pass
