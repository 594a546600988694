"""What each tool's definition costs in every model request, in the engine's own token estimate.

Every request of a turn carries the enabled tools' definitions again: the entry built by
`tooldefs.tool_definition`, serialised as `tooldefs.encode_body` sends it. Its size is priced with the
estimator the engine uses for the rest of the request (history.estimate_system: a character count
divided by three, as upstream does), so the numbers add up with `%cireil prompt`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .history import estimate_system
from .tooldefs import encode_body, tool_definition

if TYPE_CHECKING:
    from ..toolkit.tool import Tool


def definition(tool: Tool) -> dict:
    """The tool's entry in a request body, exactly as the engine builds it."""
    return tool_definition({"name": tool.name, "description": tool.description, "parameters": tool.parameters})


def definition_text(tool: Tool) -> str:
    """The JSON text of that entry as it appears in the POSTed body."""
    return encode_body(definition(tool)).decode()


def definition_tokens(tool: Tool) -> int:
    return estimate_system(definition_text(tool))


def tool_costs(tools: list[Tool]) -> dict[str, int]:
    """Tokens per tool name, in the order given."""
    return {t.name: definition_tokens(t) for t in tools}
