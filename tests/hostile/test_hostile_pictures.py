"""Pictures a view shows are read through their folder's descriptor, never by host path.

A respond attachment (a sandbox path the model chose) and an image_ref of a sessions.db row (a file
name under <agent>/images) may lead out by a symlink planted at any moment, name a FIFO, a directory
or a file of gigabytes. The turn view and the session store read them only through safefs; anything
else is a named placeholder (the turn view) or a picture left unloaded (the store).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

import cireil
import upstream_db as up
from cireil.runtime.sessions import SessionStore
from conftest import make_agent

PNG = b"\x89PNG\r\n\x1a\n" + b"inside picture bytes"
SECRET = b"\x89PNG\r\n\x1a\n" + b"OUTSIDE-SECRET-PICTURE"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def world(tmp_path):
    agent_dir = make_agent(tmp_path, "respond = true\nread = true\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(SECRET)
    ws = agent_dir / "workspace"
    (ws / "ok.png").write_bytes(PNG)
    (ws / "swapped.png").write_bytes(PNG)
    os.symlink(outside / "secret.png", ws / "link.png")
    os.mkfifo(ws / "pipe.png")
    (ws / "dir.png").mkdir()
    with open(ws / "big.png", "wb") as f:
        f.truncate(3 * 1024 * 1024)  # sparse: over the inline limit without writing 3 MB
    agent = cireil.load(agent_dir)
    yield agent, outside
    agent.close()


def _respond_html(agent, monkeypatch, attachments: list[str]) -> str:
    """Draw a respond with these attachments as the live turn view does, and return its HTML."""
    from cireil.kernel.views.turn import TurnView
    from cireil.runtime.toolkit.result import ToolResult

    view = TurnView(agent)
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(view, "_show", lambda pair, handle=False: shown.append(pair))
    sent = {"sessionId": "s", "fromSessionId": "s", "content": "see", "final": True, "attachments": attachments}
    view.draw({"type": "respond", **sent})
    call = {"id": "c1", "name": "respond", "input": {"content": "see", "attachments": attachments}}
    result = ToolResult("respond", call["input"], {"success": True}, 0.0, agent=agent)
    view.draw({"type": "result", "step": 1, "call": call, "result": result})
    ((_text, html),) = shown
    return html


def test_the_turn_view_shows_pictures_from_inside_the_sandbox_only(world, monkeypatch):
    agent, _ = world
    paths = [f"/workspace/{n}" for n in ("ok.png", "link.png", "pipe.png", "dir.png", "big.png", "none.png")]
    html = _respond_html(agent, monkeypatch, [*paths, "/workspace/../../outside/secret.png", "/etc/passwd"])
    assert f"base64,{_b64(PNG)}" in html
    assert _b64(SECRET)[12:] not in html
    for path, why in [
        ("/workspace/link.png", "outside the sandbox"),
        ("/workspace/pipe.png", "not a regular file"),
        ("/workspace/dir.png", "a directory"),
        ("/workspace/big.png", "3,145,728 bytes, over the 2,097,152-byte limit"),
        ("/workspace/none.png", "no such file"),
        ("/workspace/../../outside/secret.png", "outside the sandbox"),
    ]:
        assert f"📎 {path} (not shown: {why}" in html, (path, html)
    assert "📎 /etc/passwd</div>" in html  # not a picture: listed by name, never opened


def test_a_symlink_swapped_in_after_the_check_is_not_followed(world, monkeypatch):
    """resolve() sees a regular file; before it is read, the agent (exec) swaps it for a link out."""
    agent, outside = world
    real = agent.sandbox_paths

    class Swapping:
        def __init__(self, paths):
            self.paths = paths

        def resolve(self, path):
            resolved = self.paths.resolve(path)
            host = agent.directory / "workspace" / "swapped.png"
            host.unlink()
            os.symlink(outside / "secret.png", host)
            return resolved

    monkeypatch.setattr(agent, "sandbox_paths", lambda *a, **k: Swapping(real(*a, **k)))
    html = _respond_html(agent, monkeypatch, ["/workspace/swapped.png"])
    assert _b64(SECRET)[12:] not in html
    assert "📎 /workspace/swapped.png (not shown: a symlink appeared in its path)" in html


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    directory = make_agent(tmp_path)
    up.create_original_db(directory / "sessions.db")
    up.fill(directory / "sessions.db", directory)
    return directory


def _first_picture(directory: Path) -> dict:
    store = SessionStore.for_agent(directory)
    try:
        return store.get(up.GUILD).history[0]["content"][1]
    finally:
        store.close()


def test_an_image_ref_is_read_inside_the_images_folder_only(store_dir, tmp_path):
    photo = store_dir / "images" / f"{up.PHOTO_ID}.webp"
    assert _first_picture(store_dir)["data"] == _b64(up.PHOTO)
    secret = tmp_path / "secret.webp"
    secret.write_bytes(SECRET)
    photo.unlink()
    os.symlink(secret, photo)
    assert _first_picture(store_dir) == {"type": "image_ref", "id": up.PHOTO_ID, "mediaType": "image/webp"}
    photo.unlink()
    os.mkfifo(photo)  # would block the kernel if opened for reading
    assert _first_picture(store_dir)["type"] == "image_ref"
    photo.unlink()
    with open(photo, "wb") as f:
        f.truncate(40 * 1024 * 1024)  # sparse, over the stored-image limit: never read into memory
    assert _first_picture(store_dir)["type"] == "image_ref"
