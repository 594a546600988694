"""The scripted server's Codex side: the Responses API as ChatGPT's Codex backend streams it, and an OAuth
token endpoint for refreshing a login. Used by scripted_llm.ScriptedLLM; standard library only.

    with ScriptedLLM() as llm:
        login = llm.codex.login(account="acct-1")        # a login file's content this server accepts
        llm.codex.expire(login["accessToken"])            # ... until it is refused with a 401
        os.environ["CIREIL_TEST_CODEX_TOKEN_URL"] = llm.codex.token_url
        llm.codex.token_requests                           # the refreshes asked for (form fields)

A `[p] kind = "openai-codex"` provider with `apiBase = llm.base_url` is answered at `{apiBase}/codex/responses`.
Access tokens are JWT-shaped (unsigned) and carry the ChatGPT account id claim the backend reads.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

ACCOUNT_CLAIM = "https://api.openai.com/auth"
EXPIRED = "Your authentication token has expired. Please try signing in again."


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def access_token(account: str | None, serial: int) -> str:
    claims: dict[str, Any] = {"sub": f"scripted-{serial}", "iat": int(time.time())}
    if account is not None:
        claims[ACCOUNT_CLAIM] = {"chatgpt_account_id": account}
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.c2NyaXB0ZWQ{serial}"


class CodexAuth:
    """Which access and refresh tokens the scripted server accepts; refreshes rotate both."""

    def __init__(self, base: Callable[[], str]) -> None:
        self._base = base  # the server's root URL, known once it listens
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self.accepted: set[str] = set()  # access tokens; a request with another gets 401
        self.refresh_tokens: dict[str, str | None] = {}  # refresh token -> the account its new tokens carry
        self.token_requests: list[dict[str, str]] = []
        self.refresh_failure: tuple[int, dict] | None = None  # (status, body) every refresh answers with
        self.expires_in = 3600
        self.check_tokens = True  # False: any bearer is accepted

    @property
    def token_url(self) -> str:
        return f"{self._base()}/oauth/token"

    def login(self, *, account: str | None = "acct-scripted", expires_in_s: float = 3600) -> dict:
        """A login file's content, as `cireilclaw codex` writes it, that this server accepts."""
        with self._lock:
            serial = next(self._serial)
            token, refresh = access_token(account, serial), f"rt-scripted-{serial}"
            self.accepted.add(token)
            self.refresh_tokens[refresh] = account
        return {"accessToken": token, "expiresAt": int((time.time() + expires_in_s) * 1000), "refreshToken": refresh}

    def expire(self, token: str) -> None:
        """The backend refuses this access token from now on (401), whatever the file says of its expiry."""
        with self._lock:
            self.accepted.discard(token)

    def accepts(self, authorization: str) -> bool:
        token = authorization.removeprefix("Bearer ")
        with self._lock:
            return not self.check_tokens or token in self.accepted

    def refresh(self, form: dict[str, str]) -> tuple[int, dict]:
        with self._lock:
            self.token_requests.append(form)
            if self.refresh_failure is not None:
                return self.refresh_failure
            if form.get("grant_type") != "refresh_token":
                return 400, {"error": "unsupported_grant_type"}
            if form.get("refresh_token") not in self.refresh_tokens:
                return 401, {"error": "invalid_grant", "error_description": "refresh token is invalid or was used"}
            account = self.refresh_tokens.pop(form["refresh_token"])  # used up, as OAuth rotation does
            serial = next(self._serial)
            token, refresh = access_token(account, serial), f"rt-scripted-{serial}"
            self.accepted.add(token)
            self.refresh_tokens[refresh] = account
        return 200, {"access_token": token, "refresh_token": refresh, "expires_in": self.expires_in, "id_token": "x"}


# -- the Responses wire format ------------------------------------------------------------------------
def _arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def usage(body: dict, answer: Any) -> dict:
    prompt = (
        len(json.dumps(body.get("input", [])))
        + len(body.get("instructions", ""))
        + len(json.dumps(body.get("tools", [])))
    )
    out = len(answer.text or "") + len(answer.reasoning or "")
    out += sum(len(name) + len(_arguments(args)) for name, args, _ in answer.calls)
    numbers = {"input_tokens": prompt // 4 + 1, "output_tokens": out // 4 + 1}
    return {
        **numbers,
        "total_tokens": numbers["input_tokens"] + numbers["output_tokens"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": len(answer.reasoning or "") // 4},
    }


def output_items(answer: Any, serial: int) -> list[dict]:
    items: list[dict] = []
    if answer.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_scripted_{serial}",
                "summary": [{"type": "summary_text", "text": answer.reasoning}],
                "encrypted_content": f"scripted-encrypted-{serial}",
            }
        )
    if answer.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_scripted_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
        )
    for n, (name, args, cid) in enumerate(answer.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_scripted_{serial}_{n}",
                "call_id": cid or f"call_scripted_{serial}_{n}",
                "name": name,
                "arguments": _arguments(args),
                "status": "completed",
            }
        )
    return items


def response(body: dict, answer: Any, serial: int, *, status: str = "completed") -> dict:
    return {
        "id": f"resp_scripted_{serial}",
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model", "scripted"),
        "status": status,
        "output": output_items(answer, serial),
        "usage": usage(body, answer),
    }


def events(body: dict, answer: Any, serial: int, pieces: Any) -> Iterator[dict]:
    """The stream of one response, item by item, in small uneven deltas (`pieces` cuts the text)."""
    shell = {"id": f"resp_scripted_{serial}", "object": "response", "status": "in_progress", "output": []}
    yield {"type": "response.created", "response": shell}
    yield {"type": "response.in_progress", "response": shell}
    if answer.stream_error is not None:
        failed = {**shell, "status": "failed", "error": {"code": "server_error", "message": answer.stream_error}}
        yield {"type": "response.failed", "response": failed}
        return
    for index, item in enumerate(output_items(answer, serial)):
        kind = item["type"]
        if kind == "reasoning":
            yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}}
            text = item["summary"][0]["text"]
            yield {"type": "response.reasoning_summary_part.added", "output_index": index, "summary_index": 0}
            for piece in pieces(text):
                yield {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": 0,
                    "delta": piece,
                }
        elif kind == "message":
            yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}
            for piece in pieces(item["content"][0]["text"]):
                yield {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": piece,
                }
        else:
            yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "arguments": ""}}
            for piece in pieces(item["arguments"]):
                yield {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": piece,
                }
            yield {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": index,
                "arguments": item["arguments"],
            }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    yield {"type": "response.completed", "response": response(body, answer, serial)}
