"""`%cireil models`: each provider of engine.toml and the models it offers, with their context windows.

availableModels as written, or (`"analyze"`, the default) the provider's own `GET {apiBase}/models`,
asked once per load; a provider whose list cannot be had says why.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from IPython.display import display

from ...render.html import ERROR, FG_DIM, LINED, MONO, esc, frame, table
from ..views.base import View

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.engine.models import ModelList


def model_lists(agent: Agent) -> tuple[list[ModelList], str, str]:
    """(one list per provider in file order, the default provider, its default model)."""
    from ...runtime.base.loop import RUNTIME

    engine = agent.engine
    config = engine.config()

    async def gather() -> list[ModelList]:
        return list(await asyncio.gather(*(engine.models.lookup(p) for p in config.providers.values())))

    default = config.providers[config.default]
    return RUNTIME.run(gather()), config.default, default.default_model


@dataclass
class ModelsView(View):
    lists: list[ModelList]
    default_provider: str
    default_model: str

    def _mark(self, provider: str, model: str) -> str:
        return "  (default)" if (provider, model) == (self.default_provider, self.default_model) else ""

    def text(self) -> str:
        lines: list[str] = []
        for listing in self.lists:
            how = "availableModels" if listing.source == "config" else "asked the provider (availableModels = analyze)"
            lines.append(f"{listing.provider}: {how}")
            if listing.error:
                lines.append(f"  unavailable: {listing.error}")
            for m in listing.models:
                window = f"{m.context_window:,} tokens" if m.context_window else "context window unknown"
                lines.append(f"  {m.id}  {window}{self._mark(listing.provider, m.id)}")
            if not listing.models and not listing.error:
                lines.append("  (no models listed)")
        return "\n".join(lines)

    def html(self) -> str:
        parts = []
        for listing in self.lists:
            how = "availableModels" if listing.source == "config" else "the provider's /models"
            rows = [
                (
                    (esc(m.id) + esc(self._mark(listing.provider, m.id)), f"font-family:{MONO}"),
                    esc(f"{m.context_window:,}" if m.context_window else "unknown"),
                )
                for m in listing.models
            ]
            error = f'<div style="color:{ERROR}">{esc(listing.error)}</div>' if listing.error else ""
            parts.append(
                f'<div><b>{esc(listing.provider)}</b> <span style="color:{FG_DIM}">({esc(how)})</span>{error}'
                f"{table(rows, cell=LINED)}</div>"
            )
        return frame("models", "".join(parts), title="models")


def show_models(agent: Agent) -> None:
    display(ModelsView(*model_lists(agent)))
