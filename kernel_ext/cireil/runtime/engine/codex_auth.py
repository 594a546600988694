"""The OAuth login of `kind = "openai-codex"`: `config/openai-codex/<authId>.json` in the runtime root, as the
original's `cireilclaw codex [--authId X]` writes it (upstream-formats §1.3, §2.4).

The file is `{"accessToken", "expiresAt" (epoch ms), "refreshToken"}`, pretty-printed, mode 0600. A token
within 60 s of its expiry, or one the server refused with a 401, is refreshed once at OpenAI's token endpoint
(the original's client id) and the file rewritten atomically at 0600; fields cireil does not know are kept
(the original would drop them). The ChatGPT account id the backend wants in a header is read from the access
token's claims. Tokens never appear in a message: the ones cireil knows are scrubbed from what a server says.

Where the file is: `<root>/config/openai-codex/` when the agent sits in a runtime root (`<root>/agents/<slug>/`),
else the original's own root, `realpath($HOME)/.cireilclaw/config/openai-codex/`.

The token endpoint can be redirected for tests only, by CIREIL_TEST_CODEX_TOKEN_URL naming a loopback
address; it is never read from a config file a user could be handed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..base.secrets import SECRETS

LOGIN_DIR = "config/openai-codex"
CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"  # the Codex CLI's, which the original uses too
TOKEN_URL = "https://auth.openai.com/oauth/token"
TOKEN_URL_VARIABLE = "CIREIL_TEST_CODEX_TOKEN_URL"
REFRESH_SKEW_MS = 60_000
ACCOUNT_CLAIM = "https://api.openai.com/auth"
TOKEN_TIMEOUT_S = 30.0
_MAX_FILE = 256 * 1024  # a login is a few KiB; anything larger is not one
_AUTH_ID = re.compile(r"^[A-Za-z0-9._-]+$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class LoginError(Exception):
    """The login file is missing, unreadable or malformed; `where` is `FILE` or `FILE:LINE`."""

    def __init__(self, where: str, message: str, *, line: int | None = None) -> None:
        super().__init__(f"{where}{f':{line}' if line else ''}: {message}")
        self.where = where
        self.line = line
        self.message = message


class RefreshFailed(Exception):
    """The token endpoint did not give a new token; the message says why (never a token)."""


def how_to_log_in(auth_id: str) -> str:
    return (
        f"the original CireilClaw creates it with `cireilclaw codex --authId {auth_id}` (a browser login to "
        'ChatGPT; `cireilclaw codex` alone for authId "default"), and cireil reads the same file'
    )


def login_path(agent_dir: Path, auth_id: str) -> Path:
    """Where the login of `auth_id` lives for this agent; ValueError for an authId the original refuses."""
    if not _AUTH_ID.match(auth_id):
        raise ValueError(f"authId {auth_id!r} may only contain letters, numbers, '.', '_' or '-' (as the original)")
    agent_dir = Path(agent_dir)
    if agent_dir.parent.name == "agents":
        root = agent_dir.parent.parent
    else:
        home = os.environ.get("HOME")
        if not home or not os.path.isabs(home):
            raise ValueError("$HOME is not set to an absolute path, so the original's root ~/.cireilclaw is unknown")
        root = Path(os.path.realpath(home)) / ".cireilclaw"
    return root / LOGIN_DIR / f"{auth_id}.json"


def shown(agent_dir: Path, path: Path) -> str:
    """The path as messages name it: relative to the agent when it is in the agent's runtime root."""
    try:
        return "../../" + str(path.relative_to(Path(agent_dir).parent.parent))
    except ValueError:
        return str(path)


@dataclass
class Login:
    access_token: str
    refresh_token: str
    expires_at: int  # epoch ms
    data: dict  # the whole file, unknown fields too

    def __post_init__(self) -> None:  # masked in every error, view and recording from now on (base/secrets.py)
        SECRETS.add_all((self.access_token, self.refresh_token))

    def __repr__(self) -> str:  # never the tokens
        return f"Login(expires_at={self.expires_at})"

    def fresh(self, now_ms: int) -> bool:
        return self.expires_at > now_ms + REFRESH_SKEW_MS


def read_login(path: Path, name: str) -> Login:
    """The login file, validated as the original validates it; LoginError naming `name` otherwise."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_MAX_FILE + 1)
    except FileNotFoundError:
        raise LoginError(name, "does not exist") from None
    except IsADirectoryError:
        raise LoginError(name, "is a directory, not a login file") from None
    except OSError as exc:
        raise LoginError(name, f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > _MAX_FILE:
        raise LoginError(name, f"is larger than {_MAX_FILE // 1024} KiB, which no login file is")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise LoginError(name, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise LoginError(name, f"is not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except RecursionError:
        raise LoginError(name, "is nested too deeply to be a login file") from None
    if not isinstance(data, dict):
        raise LoginError(name, f"must hold a JSON object, not {type(data).__name__}")
    problems = []
    for key in ("accessToken", "refreshToken"):
        if not isinstance(data.get(key), str) or not data[key]:
            problems.append(f"'{key}' must be a non-empty string")
    expires = data.get("expiresAt")
    if isinstance(expires, float) and expires.is_integer():
        expires = int(expires)
    if not isinstance(expires, int) or isinstance(expires, bool):
        problems.append("'expiresAt' must be a whole number (milliseconds since 1970)")
    if problems:
        raise LoginError(name, "; ".join(problems) + " (the file `cireilclaw codex` writes has all three)")
    return Login(data["accessToken"], data["refreshToken"], expires, data)


def permission_problem(path: Path) -> str | None:
    """A login others on the machine can read is worth a word (the original writes it 0600)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if mode & 0o077:
        return f"is readable by others (mode {mode:o}); `chmod 600` it (cireil rewrites it 0600 on refresh)"
    return None


def account_id(access_token: str) -> str | None:
    """The ChatGPT account id in the access token's claims, or None when it has none."""
    parts = access_token.split(".")
    if len(parts) != 3 or len(parts[1]) > _MAX_FILE:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, RecursionError):
        return None
    claim = payload.get(ACCOUNT_CLAIM) if isinstance(payload, dict) else None
    found = claim.get("chatgpt_account_id") if isinstance(claim, dict) else None
    return found if isinstance(found, str) and found else None


def token_url() -> str:
    """OpenAI's token endpoint; a test may point it at its own loopback server, nothing else may."""
    override = os.environ.get(TOKEN_URL_VARIABLE)
    if not override:
        return TOKEN_URL
    parts = urlsplit(override)
    if parts.scheme != "http" or (parts.hostname or "") not in _LOOPBACK:
        raise RefreshFailed(f"{TOKEN_URL_VARIABLE} may only name an http:// loopback address (it exists for tests)")
    return override


def scrub(text: str, *secrets: str) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<token>")
    return text


def write_login(path: Path, data: dict) -> None:
    """Rewrite the login atomically at 0600, pretty-printed as the original writes it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(json.dumps(data, indent=2, ensure_ascii=False).encode())
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)  # an existing temp file keeps its mode through O_CREAT
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


async def _request_refresh(refresh_token: str) -> dict:
    import httpx

    url = token_url()
    form = {"client_id": CLIENT_ID, "grant_type": "refresh_token", "refresh_token": refresh_token}
    host = urlsplit(url).hostname or ""
    from .bodyread import ACCEPT_ENCODING, BadEncoding, read_excerpt

    try:
        async with (
            asyncio.timeout(TOKEN_TIMEOUT_S * 2),
            httpx.AsyncClient(
                timeout=TOKEN_TIMEOUT_S,
                follow_redirects=False,
                trust_env=host not in _LOOPBACK,
                headers={"Accept-Encoding": ACCEPT_ENCODING},
            ) as client,
            client.stream("POST", url, data=form) as response,
        ):
            # decoded in bounded pieces and never past _MAX_FILE: a compressed reply cannot grow in memory
            raw, _ = await read_excerpt(response, _MAX_FILE)
    except TimeoutError:
        raise RefreshFailed(f"{url} did not answer within {TOKEN_TIMEOUT_S * 2:g} s") from None
    except BadEncoding as exc:
        raise RefreshFailed(f"{url} answered with a body that cannot be decoded: {exc}") from None
    except httpx.HTTPError as exc:
        raise RefreshFailed(f"could not reach {url}: {exc or type(exc).__name__}") from None
    if response.status_code != 200:
        text = scrub(raw.decode("utf-8", "replace").strip()[:500], refresh_token) or "(empty body)"
        raise RefreshFailed(f"{url} answered HTTP {response.status_code}: {text}")
    try:
        reply = json.loads(raw)
    except (ValueError, RecursionError):
        raise RefreshFailed(f"{url} answered with something that is not JSON") from None
    access = reply.get("access_token") if isinstance(reply, dict) else None
    expires_in = reply.get("expires_in") if isinstance(reply, dict) else None
    if not isinstance(access, str) or not access or not isinstance(expires_in, int) or isinstance(expires_in, bool):
        raise RefreshFailed(f"{url} answered without access_token and expires_in")
    return reply


_locks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}


def _lock(path: Path) -> asyncio.Lock:
    """One refresh at a time per login file (a refresh token is used up by its refresh)."""
    loop = asyncio.get_running_loop()
    found = _locks.get(str(path))
    if found is None or found[0] is not loop:
        found = _locks[str(path)] = (loop, asyncio.Lock())
    return found[1]


async def valid_login(path: Path, name: str, *, rejected: str | None = None) -> Login:
    """A login whose access token is good for another minute: read, refreshed when needed, rewritten.

    `rejected`: the access token the server just refused (401); a file still holding it is refreshed even
    when its expiry is far, a file holding another one (refreshed meanwhile, by cireil or the original) is used.
    """
    async with _lock(path):
        login = read_login(path, name)
        now = int(time.time() * 1000)
        if login.fresh(now) and (rejected is None or login.access_token != rejected):
            return login
        try:
            reply = await _request_refresh(login.refresh_token)
        except RefreshFailed as exc:
            raise RefreshFailed(scrub(str(exc), login.access_token, login.refresh_token)) from None
        data = dict(login.data)  # fields cireil does not know stay
        data["accessToken"] = reply["access_token"]
        data["expiresAt"] = int(time.time() * 1000) + reply["expires_in"] * 1000
        if isinstance(reply.get("refresh_token"), str) and reply["refresh_token"]:
            data["refreshToken"] = reply["refresh_token"]
        write_login(path, data)
        return Login(data["accessToken"], data["refreshToken"], data["expiresAt"], data)


def login_problem(agent_dir: Path, auth_id: str) -> tuple[str, int | None, str] | None:
    """(the file as messages name it, its line, what is wrong) or None when the login can be used: for load
    and dry-run, without the network (an expired token is fine: it is refreshed at the first turn)."""
    try:
        path = login_path(agent_dir, auth_id)
    except ValueError as exc:
        return f"{LOGIN_DIR}/{auth_id}.json", None, str(exc)
    name = shown(agent_dir, path)
    try:
        read_login(path, name)
    except LoginError as exc:
        if exc.message == "does not exist":
            return name, None, f"does not exist: {how_to_log_in(auth_id)}"
        return name, exc.line, exc.message
    return None
