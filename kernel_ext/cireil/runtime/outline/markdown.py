"""Markdown sections from markdown-it-py's block tokens, never from regular expressions.

What counts as a section (spec and issue 3): top-level ATX headings; Setext headings only when the
file has no ATX heading; nothing inside code fences, HTML blocks, blockquotes or list items; no
heading made out of YAML (`---`) or TOML (`+++`) front matter. Labels keep link labels and drop
link destinations and other markup.

Cheaper than markdown-it's own block-level parse of the same text (bench/outline.py), with the
same sections (tests/runtime/outline/test_outline_exact.py): the likeliest blocks skip the rules
that cannot match them, top-level paragraphs make no tokens, and a heading's label is read
directly when it is made of constructs with a single reading (text, simple links and code spans,
plain emphasis, escapes), by markdown-it's inline rules otherwise.
"""

from __future__ import annotations

import re
import string
from functools import cache
from typing import TYPE_CHECKING, Any

from .model import Heading
from .slug import to_slug

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_block.state_block import StateBlock
    from markdown_it.token import Token

_FRONT_MATTER = ("---", "+++")


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # lazy: only computing an outline needs it

    md = MarkdownIt("commonmark")
    # Only headings need inline parsing (below, one heading at a time); skipping it for every
    # paragraph, and taking the common blocks by a shorter road (`_likely_block`), keeps an outline
    # cheaper than markdown-it's own block-level parse of the same text (bench/outline.py).
    md.disable("inline")
    md.block.ruler.before("table", "cireil_likely", _likely_block)
    return md


@cache
def _rules() -> tuple[Any, Any, Any]:
    from markdown_it.rules_block import heading, lheading, paragraph

    return heading, lheading, paragraph


def _likely_block(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """ATX headings and text blocks without trying every rule first: exact, because the rules it
    skips all want something else at the start of the line (`>`, `<`, `[`, a fence, a list or rule
    marker, four spaces of indent) and give up on `#` or a letter without side effects. Anything
    else is left to the usual rules (this one returns False)."""
    if silent or state.sCount[start] - state.blkIndent >= 4:
        return False
    pos = state.bMarks[start] + state.tShift[start]
    ch = state.src[pos : pos + 1]
    heading, lheading, paragraph = _rules()
    if ch == "#":
        if heading(state, start, end, False):
            return True  # else "#foo": text, as below
    elif not ("a" <= ch <= "z" or "A" <= ch <= "Z"):
        return False
    if state.level == 0 and state.blkIndent == 0 and end == state.lineMax:
        return _top_level_text(state, start, end)
    return lheading(state, start, end, False) or paragraph(state, start, end, False)


def _top_level_text(state: StateBlock, start: int, end: int) -> bool:
    """A top-level setext heading (made by markdown-it's own rule) or a paragraph, which gets no
    tokens: an outline never looks at them. One scan instead of lheading's and paragraph's two, with
    the same stops: a blank line, a setext underline, or a line that interrupts a paragraph (one
    starting with a letter never does, so the interrupting rules are only asked about the others)."""
    src, b_marks, t_shift, e_marks, s_count = state.src, state.bMarks, state.tShift, state.eMarks, state.sCount
    terminators = state.md.block.ruler.getRules("paragraph")
    parent = state.parentType
    state.parentType = "paragraph"
    line = start + 1
    underline = False
    while line < end:
        first, last = b_marks[line] + t_shift[line], e_marks[line]
        if first >= last:  # blank
            break
        if s_count[line] > 3:  # lazy continuation
            line += 1
            continue
        ch = src[first]
        if ch in "-=" and state.skipSpaces(state.skipCharsStr(first, ch)) >= last:
            underline = True
            break
        if s_count[line] < 0 or "a" <= ch <= "z" or "A" <= ch <= "Z":
            line += 1
            continue
        if any(rule(state, line, end, True) for rule in terminators):
            break
        line += 1
    state.parentType = parent
    if underline:
        return bool(_rules()[1](state, start, end, False))
    state.line = line
    return True


def _same(url: str) -> str:
    return url


def _valid(url: str) -> bool:
    """markdown-it's verdict on a link destination, normalised, which decides whether `[a](b)` is a
    link: computed in full only when the destination has a scheme other than http(s)/mailto (a
    destination without `:` cannot normalise into `javascript:`, and http(s)/mailto keep their scheme)."""
    if ":" not in url or url.strip().lower().startswith(("http://", "https://", "mailto:")):
        return True
    from markdown_it.common.normalize_url import normalizeLink, validateLink

    return validateLink(normalizeLink(url))


@cache
def _inline_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")  # with inline parsing: heading labels only
    # A label keeps a link's text, never its destination: normalising URLs (percent-encoding,
    # punycode) is work for nothing, only whether the destination is allowed changes the parse.
    md.normalizeLink = _same  # type: ignore[method-assign]
    md.validateLink = _valid  # type: ignore[method-assign]
    return md


def front_matter_end(lines: list[str]) -> int:
    """Number of leading lines that are YAML/TOML front matter (0 when there is none)."""
    if not lines or lines[0].rstrip() not in _FRONT_MATTER:
        return 0
    delimiter = lines[0].rstrip()
    for index in range(1, len(lines)):
        if lines[index].rstrip() == delimiter:
            return index + 1
    return 0


# Ordinary characters of a heading: nothing here starts inline markup (`!`, `&` and `<` are
# checked where they stand, `(` and `)` only matter after `]`).
_PLAIN = re.compile(r"[^\[\]`*_<&!\\]+")
# `[text](destination)` with plain text and a plain destination: a link whose label is its text;
# `[text][ref]`: the same when ref is defined.
_LINK = re.compile(r"\[([^\[\]`*_<&!\\]*)\]\(([^\s()<>\\`'\"]+)\)")
_REF_LINK = re.compile(r"\[([^\[\]`*_<&!\\]*)\]\[([^\[\]`*_<&!\\]+)\]")
# `*text*` or `**text**` after a space, around plain text that starts and ends with a letter or
# digit, closed before a space, the end or ordinary punctuation: emphasis and nothing else.
_EMPHASIS = re.compile(r"(\*\*?)([^\W_](?:[^\[\]`*_<&!\\]*[^\W_])?)\1(?=$|[\s.,;:!?)])")
_PUNCTUATION = frozenset(string.punctuation)  # what a backslash escapes (CommonMark: ASCII punctuation)


def _plain_label(content: str, env: dict) -> str | None:
    """The label of a heading made of text, simple links, simple code spans and underscores inside
    words, or None when anything else appears (markdown-it then decides). Each construct accepted
    here has one reading in CommonMark, the one markdown-it gives it, so the result is the same."""
    if "\n" in content:  # a setext heading's line breaks: soft or hard breaks, the inline parser's call
        return None
    out: list[str] = []
    pos, end = 0, len(content)
    while pos < end:
        run = _PLAIN.match(content, pos)
        if run is not None:
            out.append(run.group())
            pos = run.end()
            continue
        ch, nxt = content[pos], content[pos + 1 : pos + 2]
        if ch == "`":  # a one-backtick code span whose text has no edge spaces
            close = content.find("`", pos + 1)
            code = content[pos + 1 : close]
            if close < 0 or not code or code[0] == " " or code[-1] == " " or content[close + 1 : close + 2] == "`":
                return None
            out.append(code)
            pos = close + 1
        elif ch == "_" and pos > 0 and content[pos - 1].isalnum() and nxt.isalnum():
            out.append(ch)  # inside a word an underscore can neither open nor close emphasis
            pos += 1
        elif (ch == "!" and nxt != "[") or (ch == "&" and not (nxt.isalnum() or nxt == "#")):
            out.append(ch)  # not an image, not an entity
            pos += 1
        elif ch == "<" and (not nxt or nxt in " \t=" or nxt.isdigit()):
            out.append(ch)  # neither a tag nor an autolink can start so
            pos += 1
        elif ch == "[":
            link = _LINK.match(content, pos)
            if link is not None and _valid(link.group(2)):
                out.append(link.group(1))
                pos = link.end()
                continue
            from markdown_it.common.utils import normalizeReference

            link = _REF_LINK.match(content, pos)
            if link is None or normalizeReference(link.group(2)) not in env.get("references", {}):
                return None
            out.append(link.group(1))
            pos = link.end()
        elif ch == "\\":  # an escape: the character itself if it is punctuation, else kept as written
            out.append(nxt if nxt in _PUNCTUATION else ch + nxt)
            pos += 1 + len(nxt)
        elif ch == "*" and (pos == 0 or content[pos - 1] == " "):
            emphasis = _EMPHASIS.match(content, pos)
            if emphasis is None:
                return None
            out.append(emphasis.group(2))
            pos = emphasis.end()
        else:
            return None
    return "".join(out).strip()


def _label(content: str, env: dict) -> str:
    """Plain text of a heading: link labels and image alt texts kept, destinations and markup gone."""
    simple = _plain_label(content, env)
    if simple is not None:
        return simple
    parts: list[str] = []

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type in ("text", "code_inline"):
                parts.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif token.children:
                walk(token.children)  # image: its alt text

    # env carries the link reference definitions the block pass found: `[label][ref]` keeps `label`.
    # The inline rules run directly (no core pass): escapes stay `text_special` tokens at the top
    # level, which the core's text_join would have turned into text.
    md = _inline_parser()
    tokens: list[Token] = []
    md.inline.parse(content, md, env, tokens)
    for token in tokens:
        if token.type == "text_special":
            parts.append(token.content)
        else:
            walk([token])
    return "".join(parts).strip()


def extract(lines: list[str]) -> list[Heading]:
    skip = front_matter_end(lines)
    # Blank lines in place of the front matter keep every later line number where it was.
    source = "\n".join([""] * skip + lines[skip:]) if skip else "\n".join(lines)
    env: dict = {}
    # The block parser alone: markdown-it's core would only add its normalisation (line breaks are
    # already `\n` here, NUL is replaced as it would) and a pass over inline tokens that have none.
    if "\0" in source:
        source = source.replace("\0", "\ufffd")
    md = _parser()
    tokens: list[Token] = []
    md.block.parse(source, md, env, tokens)
    atx: list[Heading] = []
    setext: list[Heading] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None:
            continue
        label = _label(tokens[index + 1].content, env)
        heading = Heading(label, to_slug(label), token.map[0] + 1, int(token.tag[1]), token.tag)
        (atx if token.markup.startswith("#") else setext).append(heading)
    return atx or setext
