"""What every small display object of the kernel layer shares: text/plain always, scoped HTML beside it.

Its own module so that a view module can build on it without importing the views that use it in turn
(subcommands.py shows lint.py's findings in its dry-run, and lint.py's own view is one of these).
"""

from __future__ import annotations

from typing import Any

from ...render.safe import safe_bundle


class View:
    def text(self) -> str:
        raise NotImplementedError

    def html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})

    def __repr__(self) -> str:
        return self.text()
