"""Cancelling synchronous work: a flag long computations on the runtime thread can poll.

asyncio delivers a cancel at the next `await`; a tool computing for seconds without awaiting (a
query over a large session store) cannot see it, and keeps the runtime thread busy after the
person interrupted. Work started through `RuntimeLoop.submit` runs with a flag that `Submitted.cancel`
sets from any thread at once; `cancel_requested()` reads it (False outside such work).
"""

from __future__ import annotations

import contextvars
import threading

_FLAG: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("cireil_cancel", default=None)


def cancel_requested() -> bool:
    flag = _FLAG.get()
    return flag is not None and flag.is_set()


def context_with(flag: threading.Event) -> contextvars.Context:
    """A copy of the current context in which `cancel_requested()` reads `flag`."""
    ctx = contextvars.copy_context()
    ctx.run(_FLAG.set, flag)
    return ctx
