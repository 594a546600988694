"""An example cireil plugin: one tool and one outline extractor.

Installed (`pip install examples/plugins/cireil-example-plugin`), it is the entry point `example`:

    # <runtime root>/config/plugins.toml
    [[plugins]]
    package = "example"

Copied to `<runtime root>/plugins/cireil_example_plugin/`, it is the local plugin
`name = "cireil_example_plugin"`. Either way, enable its tool in the agent's tools.toml:
`word-count = true`.
"""

from __future__ import annotations

import re

from cireil import Tool, ToolContext, ToolError
from cireil.params import Boolean, Params, String
from cireil.plugin import Extractor, Heading, Plugin

_ORG_HEADING = re.compile(r"^(\*+)\s+(.+?)\s*$")


async def _word_count(args: dict, ctx: ToolContext) -> dict:
    text = args["text"]
    if not text.strip() and not args["allowEmpty"]:
        raise ToolError("text is empty", hint="pass some text, or allowEmpty=true to count nothing")
    return {"words": len(text.split()), "lines": len(text.splitlines()), "characters": len(text)}


WORD_COUNT = Tool(
    name="word-count",
    description="Count the words, lines and characters of a text.",
    params=Params(
        text=String(description="The text to count."),
        allowEmpty=Boolean(description="Count an empty text instead of refusing it.", default=False),
    ),
    run=_word_count,
    main_arg="text",
    body_arg="text",
)


def _org_headings(lines: list[str]) -> list[Heading]:
    """Org-mode headings (`* Title`, `** Sub`) as outline sections."""
    from cireil.runtime.outline.slug import to_slug

    found = []
    for number, line in enumerate(lines, start=1):
        match = _ORG_HEADING.match(line)
        if match:
            label = match.group(2)
            found.append(Heading(label, to_slug(label), number, len(match.group(1)), f"org{len(match.group(1))}"))
    return found


ORG = Extractor("org", ("*.org",), _org_headings)


def plugin() -> Plugin:
    return Plugin(name="example", tools=(WORD_COUNT,), extractors=(ORG,))
