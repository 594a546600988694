"""Cookies a server sets (a load balancer's stickiness), sent back to it: the standard library's cookie rules.

Work happens only when a server sends Set-Cookie or has cookies stored; a server that sets none costs nothing.
"""

from __future__ import annotations

import email.message
import urllib.request
from http.cookiejar import CookieJar

MAX_SET = 50  # Set-Cookie fields taken from one answer
MAX_KEPT = 50  # cookies kept: a server minting new names on every answer must not grow every request


class _Answer:
    """What CookieJar.extract_cookies reads of a response: its header fields via info()."""

    def __init__(self, values: list[str]) -> None:
        self._message = email.message.Message()
        for value in values[:MAX_SET]:
            self._message["Set-Cookie"] = value

    def info(self) -> email.message.Message:
        return self._message


class Jar:
    def __init__(self, url: str) -> None:
        self._url = url
        self._jar = CookieJar()

    def __bool__(self) -> bool:
        return bool(len(self._jar))

    def take(self, set_cookie: list[str]) -> None:
        if len(self._jar) >= MAX_KEPT:
            self._jar.clear_expired_cookies()
            if len(self._jar) >= MAX_KEPT:
                return
        self._jar.extract_cookies(_Answer(set_cookie), urllib.request.Request(self._url))  # type: ignore[arg-type]

    def header(self) -> str | None:
        """The Cookie field for the next request (expired cookies left out), or None."""
        if not len(self._jar):
            return None
        request = urllib.request.Request(self._url)
        self._jar.add_cookie_header(request)
        return request.get_header("Cookie")
