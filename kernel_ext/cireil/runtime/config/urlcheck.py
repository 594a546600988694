"""Whether a configured http(s) URL can be used at all: checked at load, not found out at call time.

`urlsplit` accepts a lot that no request can be made to: a port over 65535 or not a number only
fails when `.port` is read, a broken IPv6 literal (`http://[::1/`) raises, CR or LF inside the URL
would split the request line. Each gives a one-line reason for a `FILE:LINE:` message.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from ..base.params import describe_value

_CONTROL = re.compile(r"[\x00-\x20\x7f]")  # controls (CR, LF, tab, NUL), space and DEL


def url_problem(url: str) -> str | None:
    """Why `url` cannot be used as an http:// or https:// endpoint; None when it can."""
    found = _CONTROL.search(url)
    if found:
        names = {"\r": "a carriage return (CR)", "\n": "a line feed (LF)", "\t": "a tab", " ": "a space"}
        what = names.get(found.group(), f"the control character U+{ord(found.group()):04X}")
        return f"contains {what}; percent-encode it or remove it"
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL": an unbalanced [ ]
        return f"cannot be parsed ({exc})"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "must be http:// or https://"
    try:
        port = parts.port
    except ValueError:
        raw = parts.netloc.rsplit("]", 1)[-1].rpartition(":")[2]
        return f"has port {raw!r}, not a number from 0 to 65535"
    del port
    host = parts.hostname or ""
    if not host:
        return "has no host"
    if "[" in parts.netloc:
        literal = host.split("%", 1)[0]  # a zone id (fe80::1%eth0) is allowed after the address
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return f"has [{host}], which is not an IPv6 address"
    try:
        import httpx  # the client the MCP transport uses: what it refuses is refused here

        httpx.URL(url)
    except Exception as exc:  # httpx.InvalidURL and friends
        return f"is refused by the HTTP client ({exc})"
    return None


def url_message(url: str, *, whole: bool = False) -> str | None:
    """url_problem as the end of a `'KEY' ...` message, quoting the URL; `whole`: also refuse a ?query or
    #fragment (an API base has a request path appended to it) and port 0."""
    problem = url_problem(url)
    if problem is None and whole:
        parts = urlsplit(url)
        if parts.port == 0:
            problem = "has port 0, which no server listens on"
        elif parts.query or parts.fragment:
            problem = "must not have a ?query or #fragment (the request path is appended to it)"
    if problem is None:
        return None
    shown = describe_value(url)  # quoted and cut short as every value in a config message
    return f"{problem}, not {shown}" if problem.startswith("must") else f"{problem}: {shown}"
