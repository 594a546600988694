"""An agent copy travels to an eval worker as a tar: unpacked with the "data" filter where Python has it, and with
the same refusals by hand where it does not (Python before 3.11.4, such as Debian 12's own 3.11.2)."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile

import pytest

from cireil.runtime.evals.worker import pack, unpack


@pytest.fixture(params=["filter", "by hand"])
def python(request, monkeypatch):
    if request.param == "by hand":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return request.param


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


def test_an_agent_copy_unpacks_whole_links_inside_it_included(tmp_path, python):
    agent = tmp_path / "agent"
    (agent / "config").mkdir(parents=True)
    (agent / "config" / "tools.toml").write_text("read = true\n")
    os.symlink("config/tools.toml", agent / "tools-link")
    unpack(pack(agent), tmp_path / "copy")
    assert (tmp_path / "copy" / "config" / "tools.toml").read_text() == "read = true\n"
    assert os.readlink(tmp_path / "copy" / "tools-link") == "config/tools.toml"


@pytest.mark.parametrize(
    "member",
    [
        (_member("../escaped.txt"), b"x"),
        (_member("link", tarfile.SYMTYPE, "/etc/passwd"), None),
        (_member("sub/link", tarfile.SYMTYPE, "../../outside"), None),
        (_member("hard", tarfile.LNKTYPE, "../outside"), None),
        (_member("fifo", tarfile.FIFOTYPE), None),
    ],
    ids=["climbs", "absolute-link", "link-out", "hard-link-out", "fifo"],
)
def test_what_would_leave_the_copy_or_is_no_file_is_refused(tmp_path, python, member):
    with pytest.raises(tarfile.TarError):
        unpack(_tar(member), tmp_path / "copy")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "outside").exists()


def test_an_absolute_name_never_lands_at_its_absolute_place(tmp_path, python):
    # the data filter strips the leading slash; by hand it is refused: either way nothing is written at /
    name = f"{tmp_path}/abs.txt"
    with contextlib.suppress(tarfile.TarError):
        unpack(_tar((_member(name), b"x")), tmp_path / "copy")
    assert not (tmp_path / "abs.txt").exists()
