"""SSE framing: CRLF, LF and CR line ends, chunks cut anywhere, comments, priming events."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cireil.runtime.mcp.sse import SseParser

STREAM = (
    "id: prime\r\ndata:\r\n\r\n"
    ": keepalive\r\n\r\n"
    'event: message\r\nid: 7\r\ndata: {"a":\r\ndata:1}\r\n\r\n'
    "event: other\r\ndata: x\r\n\r\n"
    "data:no-space\r\n\r\n"
)


def events(text: str, cuts: list[int] = ()) -> list[tuple[str, str, str | None]]:
    parser = SseParser()
    out, last = [], 0
    for cut in [*sorted(cuts), len(text)]:
        out += [(e.event, e.data, e.id) for e in parser.feed(text[last:cut])]
        last = cut
    return out + [(e.event, e.data, e.id) for e in parser.finish()]


EXPECTED = [("message", '{"a":\n1}', "7"), ("other", "x", None), ("message", "no-space", None)]


def test_crlf_lf_and_cr_framing_give_the_same_events():
    assert events(STREAM) == EXPECTED
    assert events(STREAM.replace("\r\n", "\n")) == EXPECTED
    assert events(STREAM.replace("\r\n", "\r")) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=8))
def test_chunks_cut_anywhere_give_the_same_events(cuts):
    assert events(STREAM, cuts) == EXPECTED


def test_an_unfinished_event_is_not_dispatched():
    parser = SseParser()
    assert list(parser.feed("data: x\n")) == []
    assert [e.data for e in parser.feed("\n")] == ["x"]
    assert parser.last_id is None
