"""An ASGI wrapper that appends every HTTP request (method, headers, JSON body) to a JSON-lines file,
so tests can see what our client put on the wire to the real SDK server."""

from __future__ import annotations

import json
from typing import Any


def recording(app: Any, path: str) -> Any:
    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body = b""
        while True:  # the whole body first; later receive() calls go to the server (disconnects included)
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        entry = {
            "method": scope["method"],
            "headers": {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
            "body": json.loads(body) if body else None,
        }
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


def read(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    except FileNotFoundError:
        return []
