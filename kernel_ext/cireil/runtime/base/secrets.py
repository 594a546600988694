"""Secrets masked in everything cireil shows or writes: errors, views, recordings, exports, logs.

Three nets, each one regex scan, linear in the text:

- known values: `SECRETS`, the process's registry of configured secrets (engine.toml apiKey values, also
  those read from an environment variable, customHeaders values, credentials in apiBase; mcp.toml
  headers and URL credentials; openai-codex tokens). The config parsers register what they load, so
  a provider that echoes a key back ("Invalid API key: sk-...") is masked wherever the echo travels.
  Values shorter than MIN_SECRET_CHARS, and words (letters only, shorter than WORD_CHARS: placeholders
  such as "replay", header values such as "garden") are not registered: masking every "abc" in every
  text would garble it while hiding nothing worth hiding; the two nets below still catch such a value
  in a URL or an Authorization header, and header views mask every configured value whatever it is.
- URL credentials in any text: the password of `scheme://user:password@host` (a bare `token@host` too)
  and the value of a query parameter whose name looks like a credential (`key`, `api_key`, `token`,
  `secret`, `password`, `sig`, ...).
- `Bearer <token>` / `Basic <token>` as an Authorization header writes them.

A masked value becomes MASK (no suffix: a key's tail is no help to the reader and some to an attacker).
Header values in views keep their scheme and length only (`mask_header`).
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "••••"
MIN_SECRET_CHARS = 6
WORD_CHARS = 12  # a value of letters only and shorter than this is a word, not a key: not masked in free text
TRIE_DEPTH = 8  # characters of the secrets' common prefixes matched as a trie (see _trie)
MAX_SECRETS = 4096  # distinct values kept (the newest); each costs one substring scan of a masked text
NOT_SECRETS = frozenset({"not-needed"})  # engine.toml's default apiKey: shown as such by the original too

# Credentials that may travel in headers: masked wherever a request's headers are shown.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"})
SECRET_NAME = re.compile(r"(?i)(token|key|secret|password|passwd|pwd|auth|sig|signature|session|credential)")

# scheme://userinfo@ : userinfo stops at what cannot be in it, so each scan ends at the next / or space
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://)([^/?#@\s\"'<>]{1,2048})@")
# ?name=value / &name=value: the name is bounded so a failed match never rescans a long run
_QUERY = re.compile(r"([?&;])([^=&?#\s\"'<>]{1,64})=([^&#\s\"'<>]*)")
# an Authorization scheme and its credential; prose ("bearer authentication") has no digit or mark in the word
_AUTH = re.compile(r"(?i)\b(bearer|basic)([ \t]+)(?=[A-Za-z]*[0-9._~+/=\-])([A-Za-z0-9._~+/\-]{8,}=*)")


class Secrets:
    """Known secret values; `mask(text)` replaces each wherever it appears, longest first."""

    def __init__(self) -> None:
        self._values: dict[str, None] = {}  # insertion-ordered: the oldest go first past MAX_SECRETS
        self._ordered: tuple[str, ...] = ()
        self._compiled: tuple[tuple[str, ...], re.Pattern[str] | None] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: object) -> None:
        """Register one configured secret (and the forms it takes in JSON and in URLs)."""
        if not isinstance(value, str) or len(value) < MIN_SECRET_CHARS or value in NOT_SECRETS:
            return
        if value.isalpha() and len(value) < WORD_CHARS:  # a word ("replay", "garden"): masking it garbles prose
            return
        scheme, space, credential = value.partition(" ")
        if space and scheme.isalpha() and len(scheme) <= 10:  # "Bearer <token>": the token alone is echoed too
            self.add(credential.strip())
        forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe="")}
        forms.add(html.escape(value, quote=True))  # as an HTML view shows it
        with self._lock:
            changed = False
            for form in forms:
                if len(form) >= MIN_SECRET_CHARS and form not in self._values:
                    self._values[form] = None
                    changed = True
            while len(self._values) > MAX_SECRETS:
                del self._values[next(iter(self._values))]
            if changed:
                self._ordered = tuple(sorted(self._values, key=len, reverse=True))

    def add_all(self, values: Iterable[object]) -> None:
        for value in values:
            self.add(value)

    def add_url(self, url: object) -> None:
        """The credentials a URL carries: its userinfo password (or a bare token user) and secret query values."""
        if not isinstance(url, str):
            return
        try:
            parts = urlsplit(url)
        except ValueError:
            return
        userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
        if userinfo:
            user, colon, password = userinfo.partition(":")
            for secret in (password,) if colon else (user,):
                self.add(secret)
                self.add(unquote(secret))
        for match in _QUERY.finditer("?" + parts.query):
            if SECRET_NAME.search(unquote_plus(match[2])) and match[3]:
                self.add(match[3])
                self.add(unquote_plus(match[3]))

    def _matcher(self) -> re.Pattern[str] | None:
        values = self._ordered
        if self._compiled is None or self._compiled[0] is not values:
            self._compiled = (values, re.compile(_trie(list(values))) if values else None)
        return self._compiled[1]

    def found_in(self, text: str) -> bool:
        matcher = self._matcher()
        return matcher is not None and matcher.search(text) is not None

    def mask_known(self, text: str) -> str:
        """`text` with every known secret masked (and nothing else); the very same object when none is in it."""
        if not isinstance(text, str) or not text:
            return text
        matcher = self._matcher()
        if matcher is None or matcher.search(text) is None:
            return text
        return matcher.sub(MASK, text)

    def mask(self, text: str) -> str:
        """`text` with every known secret, URL credential and Authorization token masked."""
        if not isinstance(text, str) or not text:
            return text
        original = text
        text = mask_patterns(self.mask_known(text))
        return original if text == original else text  # unchanged: the very same object (callers test identity)

    def mask_data(self, value: Any, _depth: int = 0) -> Any:
        """A JSON-like value with every known secret masked in its strings (keys too); the same object when
        nothing changed. Only known values: data is what tools run with (a model's arguments, a recorded call),
        and the URL and Bearer patterns of `mask` would change code that merely looks like a credential."""
        if isinstance(value, str):
            return self.mask_known(value)
        if _depth > 200:  # beyond what bounded JSON can hold: shown as masked text rather than walked
            return self.mask_known(json.dumps(value, ensure_ascii=False, default=str))
        if isinstance(value, dict):
            out, changed = {}, False
            for key, item in value.items():
                new_key = self.mask_known(key) if isinstance(key, str) else key
                new_item = self.mask_data(item, _depth + 1)
                changed = changed or new_key is not key or new_item is not item
                out[new_key] = new_item
            return out if changed else value
        if isinstance(value, list | tuple):
            items = [self.mask_data(v, _depth + 1) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value


def _trie(values: list[str], depth: int = 0) -> str:
    """One regex matching any of `values`, longest first, as a trie of their first TRIE_DEPTH characters.

    A plain alternation tries every value at every position; the trie tries one character per level, so a
    scan costs about the same whatever the number of secrets. Below TRIE_DEPTH the few values left sharing
    that prefix are an alternation (nesting stays shallow for the regex compiler)."""
    if depth >= TRIE_DEPTH or len(values) == 1:
        return "(?:" + "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)) + ")"
    groups: dict[str, list[str]] = {}
    for value in values:
        if value:
            groups.setdefault(value[0], []).append(value[1:])
    branches = [re.escape(first) + _trie(rest, depth + 1) for first, rest in groups.items()]
    if "" in values:  # a value ends here: tried after every longer one
        branches.append("")
    return "(?:" + "|".join(branches) + ")"


SECRETS = Secrets()


def mask(text: str) -> str:
    """`text` fit to show or store: known secrets, URL credentials and Authorization tokens masked."""
    return SECRETS.mask(text)


def mask_data(value: Any) -> Any:
    """A JSON-like value with every known secret masked in its strings (see Secrets.mask_data)."""
    return SECRETS.mask_data(value)


def _userinfo(match: re.Match[str]) -> str:
    userinfo = match[2]
    user, colon, _ = userinfo.partition(":")
    return f"{match[1]}{user}:{MASK}@" if colon else f"{match[1]}{MASK}@"


def _query(match: re.Match[str]) -> str:
    if match[3] and SECRET_NAME.search(unquote_plus(match[2])):
        return f"{match[1]}{match[2]}={MASK}"
    return match[0]


def mask_patterns(text: str) -> str:
    """URL credentials and Authorization tokens in free text, whether configured or not."""
    if "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    if "=" in text:
        text = _QUERY.sub(_query, text)
    return _AUTH.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)


def mask_url(url: str) -> str:
    """`url` fit to show: a password in it, and query values whose names look like credentials, masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return mask(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = _QUERY.sub(_query, "?" + parts.query)[1:] if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_header(name: str, value: str, configured: Iterable[str] = frozenset()) -> str:
    """A header's value fit to show: a credential header's (and a configured one's) scheme (Bearer, Basic)
    and length stay, the secret itself does not; any other value is masked as text."""
    lower = name.lower()
    if lower not in SECRET_HEADERS and lower not in configured:
        return mask(value)
    scheme, space, rest = value.partition(" ")
    if space and scheme.isalpha() and len(scheme) <= 10 and lower in ("authorization", "proxy-authorization"):
        return f"{scheme} {MASK} ({len(rest)} chars)"
    return f"{MASK} ({len(value)} chars)"


def masked_headers(headers: Any, configured: Iterable[str] = frozenset()) -> dict[str, str]:
    """Header pairs (an httpx.Headers, a dict, pairs) as a dict with secrets masked; repeated names joined."""
    if headers is None:
        return {}
    configured = frozenset(c.lower() for c in configured)
    items = headers.multi_items() if hasattr(headers, "multi_items") else getattr(headers, "items", lambda: headers)()
    out: dict[str, str] = {}
    for name, value in items:
        shown = mask_header(name, value, configured)
        out[name] = f"{out[name]}, {shown}" if name in out else shown
    return out


def dataclass_repr(obj: Any, secret_tables: Iterable[str] = ()) -> str:
    """A dataclass's repr with its strings masked and the values of `secret_tables` (header tables) hidden:
    a config object displayed in a cell is saved with the notebook."""
    parts = []
    for item in dataclasses.fields(obj):
        if not item.repr:
            continue
        value = getattr(obj, item.name)
        if item.name in secret_tables and isinstance(value, dict):
            value = {name: MASK for name in value}
        elif isinstance(value, str):
            value = mask(value)
        parts.append(f"{item.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"
