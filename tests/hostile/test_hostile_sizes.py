"""Size bounds: open-file and read-sections share read's 256 KiB limit; the context never carries a huge file."""

from __future__ import annotations

import pytest

import cireil
from cireil.runtime.files.textfile import READ_LIMIT
from readtools import reading_agent

BIG = "/workspace/big.md"


@pytest.fixture
def agent(tmp_path):
    root = reading_agent(tmp_path)
    (root / "workspace" / "big.md").write_text(("# Head\n\n" + "x" * 1000 + "\n") * 2000)  # ~2 MB
    a = cireil.load(root)
    yield a
    a.close()


def test_open_file_refuses_a_file_over_the_read_limit(agent):
    for args in ({"path": BIG}, {"path": BIG, "all": True}, {"path": BIG, "sections": ["head"]}):
        result = agent.call("open-file", args)
        assert not result.success
        assert f"over the {READ_LIMIT}-byte limit (256 KiB)" in result["error"] and result["hint"]
    assert agent.session.opened_files == []


def test_read_sections_refuses_a_file_that_grew_past_the_limit(agent):
    path = "/workspace/long.md"
    assert agent.call("open-file", path=path).success
    host = agent.directory / "workspace" / "long.md"
    host.write_text(host.read_text() * 200)  # now well over 256 KiB
    result = agent.call("read-sections", path=path, all=True)
    assert not result.success and "read-sections does not pin or show it" in result["error"]
    context = str(agent.context())
    assert len(context) < 10_000  # the grown file is not sent with every model call
    assert f'<file path="{path}"' in context and "over the 262144-byte limit" in context
    host.write_text("# Small again\n")
    assert "# Small again" in str(agent.context())


def test_pending_media_keeps_one_copy_of_a_repeated_picture_and_is_bounded(agent):
    from cireil.runtime.files import media

    picture = agent.directory / "workspace" / "big.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2 * 1024 * 1024))
    for _ in range(100):
        assert agent.call("read", path="/workspace/big.png").success
    assert len(agent.session.pending_media) == 1
    for i in range(media.PENDING_MEDIA_ITEMS + 10):
        (agent.directory / "workspace" / f"p{i}.png").write_bytes(b"\x89PNG" + i.to_bytes(4, "big") + bytes(1024))
        agent.call("read", path=f"/workspace/p{i}.png")
    pending = agent.session.pending_media
    assert len(pending) == media.PENDING_MEDIA_ITEMS
    assert pending[-1]["path"] == f"/workspace/p{media.PENDING_MEDIA_ITEMS + 9}.png"  # the newest kept
    assert sum(len(p["data"]) for p in pending) <= media.PENDING_MEDIA_BYTES


def test_cap_result_keeps_small_results_and_cuts_big_ones(tmp_path):
    import json

    from cireil.runtime.toolkit.resultcap import cap_result

    small = {"content": "x" * 100, "success": True}
    assert cap_result(small, limit=1000, agent_dir=tmp_path, tool="t", call_id="c") is small
    assert not (tmp_path / ".cireil").exists()
    big = {"content": "y" * 50_000, "items": list(range(100)), "success": True}
    cut = cap_result(big, limit=4000, agent_dir=tmp_path, tool="read", call_id="call/1")
    assert len(json.dumps(cut, ensure_ascii=False).encode()) <= 4000
    assert cut["success"] is True and cut["items"] == list(range(100)) and "more characters cut" in cut["content"]
    (saved,) = (tmp_path / ".cireil" / "results").iterdir()
    assert json.loads(saved.read_text()) == big and oct(saved.stat().st_mode & 0o777) == "0o600"
    numbers = {"values": list(range(100_000)), "success": False}  # big by structure: a JSON prefix only
    cut = cap_result(numbers, limit=4000, agent_dir=tmp_path, tool="t", call_id="c")
    assert cut["success"] is False and cut["preview"].startswith('{"values": [0, 1, 2')
    assert len(json.dumps(cut).encode()) <= 4000


def test_many_opened_files_together_stay_under_a_total(agent):
    from cireil.runtime.engine.opened_files import OPENED_TOTAL_LIMIT

    ws = agent.directory / "workspace"
    for i in range(12):  # each just under the per-file limit: 12 of them would be ~3 MB per request
        (ws / f"f{i}.txt").write_text(f"file {i}\n" + "z" * (READ_LIMIT - 100))
        assert agent.call("open-file", path=f"/workspace/f{i}.txt").success
    context = str(agent.context())
    assert len(context) < OPENED_TOTAL_LIMIT + 10_000
    assert "file 0\n" in context and "Not shown: the files before it already take" in context
    assert '<file path="/workspace/f11.txt"' in context  # every file is still named


def test_config_messages_show_control_characters(tmp_path):
    from conftest import make_agent

    agent = make_agent(tmp_path, 'list-dir = true\n"\\u001b]0;pwned\\u0007" = true\n')
    (message,) = [str(e) for e in cireil.dry_run(agent).errors]
    assert "\x1b" not in message and "␛]0;pwned␇" in message


def test_a_picture_or_video_over_the_media_limit_is_refused_before_it_is_read(agent):
    from cireil.runtime.files import media

    ws = agent.directory / "workspace"
    for name in ("huge.mp4", "huge.png"):
        with open(ws / name, "wb") as f:
            f.truncate(300 * 1024 * 1024)  # sparse: 300 MB that cost no disk, as `truncate -s` in exec makes
        result = agent.call("read", path=f"/workspace/{name}")
        assert not result.success and result["hint"]
        assert f"is {300 * 1024 * 1024} bytes, over the {media.MEDIA_READ_LIMIT}-byte limit (20 MiB)" in result["error"]
    assert agent.session.pending_media == []
    (ws / "fine.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(1024))
    assert agent.call("read", path="/workspace/fine.png").success
    assert len(agent.session.pending_media) == 1
