"""API key pools (upstream-formats.md §2.5): a provider's keys taken in turn, a rate-limited key benched.

One pool per distinct key list, shared by every provider of the agent that lists the same keys, as the
original shares them within its process. Each request takes the next key that is not benched; HTTP 429
benches that key for 30 minutes and the request moves on to the next; a reply that arrived but was
unusable hands the same key to the next request. State lives in memory: a new kernel (or a reloaded
agent) starts with every key available.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from ..config.engine_config import KeySource

COOLDOWN_S = 30 * 60


class AllKeysRateLimited(Exception):
    """Every key of the pool is benched; `wait_s` is when the first comes back."""

    def __init__(self, count: int, wait_s: float) -> None:
        self.count = count
        self.wait_s = wait_s
        keys = "the only API key" if count == 1 else f"all {count} API keys"
        super().__init__(
            f"{keys} rate limited (HTTP 429) recently; the next is tried again in ~{math.ceil(wait_s)} s "
            "(loading the agent again, e.g. %cireil load, forgets this)"
        )


class KeyPool:
    def __init__(self, keys: Sequence[KeySource], *, clock: Callable[[], float] = time.monotonic) -> None:
        self.keys = list(keys)
        self._clock = clock
        self._next = 0
        self._benched: dict[int, float] = {}  # key index -> when it was benched

    def take(self) -> int:
        """The index of the key this request uses; raises AllKeysRateLimited when every key is benched."""
        now = self._clock()
        self._benched = {i: t for i, t in self._benched.items() if now - t < COOLDOWN_S}
        for _ in range(len(self.keys)):
            index = self._next
            self._next = (self._next + 1) % len(self.keys)
            if index not in self._benched:
                return index
        wait = min(t + COOLDOWN_S - now for t in self._benched.values())
        raise AllKeysRateLimited(len(self.keys), wait)

    def bench(self, index: int) -> None:
        self._benched[index] = self._clock()

    def reuse(self, index: int) -> None:
        """The reply with this key was unusable: the next request takes it again."""
        self._next = index

    @property
    def available(self) -> int:
        now = self._clock()
        return sum(1 for i in range(len(self.keys)) if now - self._benched.get(i, -math.inf) >= COOLDOWN_S)


class KeyPools:
    """The pools of one agent, keyed by the key list itself (literal keys and variable names)."""

    def __init__(self) -> None:
        self._pools: dict[tuple, KeyPool] = {}

    def get(self, keys: Sequence[KeySource]) -> KeyPool:
        ident = tuple((k.value, k.env) for k in keys)
        pool = self._pools.get(ident)
        if pool is None:
            pool = self._pools[ident] = KeyPool(keys)
        return pool
