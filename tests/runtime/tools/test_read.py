"""read: the 262144-byte limit, outline or content, raw, UTF-8 decoding, media, hostile paths."""

from __future__ import annotations

import os

import pytest

import cireil
from readtools import LONG_DOC, PNG, reading_agent


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


def test_a_few_stray_bytes_keep_a_text_file_readable(agent):
    # Latin-1 prose read as UTF-8: about 5% bad bytes, replaced as upstream does, never refused
    text = ("Grüße aus München, schöne Äpfel und Birnen. " * 40).encode("latin-1")
    (ws(agent) / "brief.txt").write_bytes(text)
    res = agent.call("read", path="/workspace/brief.txt")
    assert res.success and res["content"].startswith("Gr\ufffd\ufffde aus M\ufffdnchen")
    # terminal colours (ESC) and form feeds are text too
    (ws(agent) / "build.log").write_bytes(b"\x1b[31merror\x1b[0m: failed\n\x0c\n" * 30)
    assert agent.call("read", path="/workspace/build.log").success


BINARIES = {
    "archive.zip": (b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 4, "ZIP archive"),
    "report.pdf": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", "PDF document"),
    "tool": (b"\x7fELF\x02\x01\x01" + b"\x00" * 64 + bytes(range(1, 256)), "ELF executable"),
    "data.bin": (bytes(range(1, 256)) * 20, "binary data (control bytes)"),
    "nul.dat": (b"looks like text\x00but is not\n" * 10, "binary data (NUL bytes)"),
    "notes.txt": ("Καλημέρα κόσμε, τι κάνεις σήμερα;\n".encode("iso-8859-7") * 20, "encoding other than UTF-8"),
    "wide.txt": ("hello\n".encode("utf-16"), "UTF-16 text"),
}


@pytest.mark.parametrize("name", sorted(BINARIES))
@pytest.mark.parametrize("raw", [False, True])
def test_a_binary_file_is_refused_with_its_size_kind_and_how_to_look_inside(agent, name, raw):
    data, kind = BINARIES[name]
    (ws(agent) / name).write_bytes(data)
    res = agent.call("read", path=f"/workspace/{name}", raw=raw)
    assert not res.success
    assert set(res.data) == {"error", "hint", "success"}  # no content, not even a part of it
    assert f"'/workspace/{name}' is not a text file" in res["error"]
    assert kind in res["error"] and f"({len(data)} bytes)" in res["error"]
    assert f"`file /workspace/{name}`" in res["hint"] and "exec" in res["hint"]
    assert agent.session.pending_media == []


def test_a_binary_file_over_the_limit_is_called_binary_not_too_big(agent):
    (ws(agent) / "big.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 300_000)
    res = agent.call("read", path="/workspace/big.sqlite")
    assert "SQLite database (300016 bytes)" in res["error"] and "excerpt" not in res["hint"]


def test_a_text_file_with_a_binary_signature_word_is_still_text(agent):
    (ws(agent) / "mz.txt").write_text("MZ is the name of the old DOS executable header.\n")
    assert agent.call("read", path="/workspace/mz.txt").success


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
