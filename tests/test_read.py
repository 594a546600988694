"""read: the 262144-byte limit, outline or content, raw, UTF-8 decoding, media, hostile paths."""

from __future__ import annotations

import os

import pytest

import cireil
from readtools import LONG_DOC, reading_agent

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    + "1f15c4890000000d49444154789c63f8ffff3f0005fe02fea7d6a0e80000000049454e44ae426082"
)


@pytest.fixture
def agent(tmp_path):
    return cireil.load(reading_agent(tmp_path))


def ws(agent) -> os.PathLike:
    return agent.directory / "workspace"


def test_short_file_returns_content(agent):
    res = agent.call("read", path="/workspace/hello.txt")
    assert res.data == {"content": "hello\n", "path": "/workspace/hello.txt", "size": 6, "success": True}


def test_long_markdown_returns_outline(agent):
    res = agent.call("read", path="/workspace/long.md")
    assert set(res.data) == {"outline", "path", "size", "success"}
    assert res.data["size"] == len(LONG_DOC.encode())
    assert [s["id"] for s in res.data["outline"]["sections"]] == ["guide", "setup", "install", "usage", "setup-1"]


def test_raw_returns_the_full_text(agent):
    res = agent.call("read", path="/workspace/long.md", raw=True)
    assert res.data["content"] == LONG_DOC and "outline" not in res.data


def test_long_file_without_sections_returns_content(agent):
    (ws(agent) / "long.txt").write_text("# not markdown\n" * 600)
    assert "content" in agent.call("read", path="/workspace/long.txt").data


@pytest.mark.parametrize("raw", [False, True])
def test_262144_bytes_are_read_and_262145_refused(agent, raw):
    exact = ("a" * 1023 + "\n") * 256
    assert len(exact) == 262144
    (ws(agent) / "exact.txt").write_text(exact)
    res = agent.call("read", path="/workspace/exact.txt", raw=raw)
    assert res.success and res.data["size"] == 262144
    (ws(agent) / "over.md").write_text("# H\n" + exact[:-5] + "x\n")
    assert (ws(agent) / "over.md").stat().st_size == 262145
    res = agent.call("read", path="/workspace/over.md", raw=raw)
    assert not res.success
    assert "262145 bytes" in res.data["error"] and "262144" in res.data["error"]
    assert "excerpt" in res.data["hint"]
    assert "content" not in res.data and "outline" not in res.data


def test_invalid_utf8_becomes_replacement_characters(agent):
    (ws(agent) / "latin1.txt").write_bytes(b"caf\xe9 ok\n")
    assert agent.call("read", path="/workspace/latin1.txt").data["content"] == "caf\ufffd ok\n"


def test_crlf_content_is_returned_unchanged(agent):
    (ws(agent) / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    assert agent.call("read", path="/workspace/crlf.txt").data["content"] == "a\r\nb\r\n"


@pytest.mark.parametrize(
    ("name", "kind", "media_type"),
    [
        ("pic.png", "image", "image/png"),
        ("pic.JPG", "image", "image/jpeg"),
        ("pic.jpeg", "image", "image/jpeg"),
        ("pic.gif", "image", "image/gif"),
        ("pic.webp", "image", "image/webp"),
        ("pic.bmp", "image", "image/bmp"),
        ("pic.tiff", "image", "image/tiff"),
        ("clip.mp4", "video", "video/mp4"),
        ("clip.webm", "video", "video/webm"),
        ("clip.mov", "video", "video/quicktime"),
    ],
)
def test_media_take_the_media_path(agent, name, kind, media_type):
    (ws(agent) / name).write_bytes(PNG)
    res = agent.call("read", path=f"/workspace/{name}")
    assert res.data == {
        "mediaType": media_type,
        "path": f"/workspace/{name}",
        "size": len(PNG),
        "success": True,
        "type": kind,
    }
    [queued] = agent.session.pending_media
    assert queued["data"] == PNG and queued["type"] == kind and queued["mediaType"] == media_type


def test_media_are_exempt_from_the_text_limit(agent):
    (ws(agent) / "big.mp4").write_bytes(b"\0" * 300_000)
    res = agent.call("read", path="/workspace/big.mp4")
    assert res.success and res.data["size"] == 300_000


def test_missing_file_and_directory(agent):
    res = agent.call("read", path="/workspace/nope.md")
    assert res.data["error"] == "ENOENT: no such file or directory, stat '/workspace/nope.md'"
    assert str(agent.directory) not in str(res.data)
    assert agent.call("read", path="/workspace/docs").data["error"].startswith("EISDIR")


@pytest.mark.parametrize(
    "path",
    [
        "workspace/hello.txt",
        "/etc/passwd",
        "/workspace/../../etc/passwd",
        "/workspace/../blocks/soul.md",
        "/tmp/x",
        "/",
    ],
)
def test_hostile_paths_are_denied_without_host_paths(agent, path):
    res = agent.call("read", path=path)
    assert not res.success and res.data["error"].startswith("Access denied")
    assert str(agent.directory) not in res.data["error"]


def test_symlink_out_of_the_sandbox_is_denied(agent, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    os.symlink(secret, ws(agent) / "link.txt")
    os.symlink(tmp_path, ws(agent) / "dirlink")
    for path in ("/workspace/link.txt", "/workspace/dirlink/secret.txt"):
        res = agent.call("read", path=path)
        assert res.data["error"].startswith("Access denied") and "secret" not in res.data.get("content", "")


def test_read_of_a_mount(tmp_path):
    agent_dir = reading_agent(tmp_path)
    source = tmp_path / "shared"
    source.mkdir()
    (source / "doc.md").write_text("from the mount\n")
    (agent_dir / "config" / "sandbox.toml").write_text(
        f'[[mounts]]\nsource = "{source}"\ntarget = "shared"\nmode = "ro"\n'
    )
    agent = cireil.load(agent_dir)
    assert agent.call("read", path="/workspace/./shared/doc.md").data["content"] == "from the mount\n"
    assert agent.call("read", path="/workspace/shared/../../x").data["error"].startswith("Access denied")


def test_a_fifo_is_refused_without_blocking(agent):
    os.mkfifo(ws(agent) / "pipe")
    assert agent.call("read", path="/workspace/pipe").data["error"] == "'/workspace/pipe' is not a regular file."
