"""The edit tool: schema, results, dry-run and apply, frontmatter files, legacy arguments, refusals."""

from __future__ import annotations

import os
import stat

import pytest

import cireil
from cireil.runtime.config.sandbox_config import Mount
from cireil.runtime.edit.blocks import parse_cell
from cireil.runtime.edit.previews import Preview, PreviewStore
from cireil.runtime.toolkit.registry import builtin
from conftest import make_agent
from toolctx import make_ctx, run

TOOLS = "list-dir = true\nwrite = true\nedit = true\n"


@pytest.fixture
def agent(tmp_path):
    return cireil.load(make_agent(tmp_path, TOOLS))


def ws(agent, name: str):
    return agent.directory / "workspace" / name


def test_schema_matches_the_reference():
    schema = builtin("edit").parameters
    assert list(schema["properties"]) == ["apply", "dryRun", "edits", "path"]  # as the original sends them
    assert schema["required"] == ["path"] and schema["additionalProperties"] is False
    item = schema["properties"]["edits"]["items"]
    assert item["required"] == ["newText", "oldText"] and item["additionalProperties"] is False
    near = item["properties"]["near"]["anyOf"]
    assert [o["type"] for o in near] == ["string", "object", "array"]
    assert set(near[1]["properties"]) == {"symbol", "line", "index", "direction", "radius", "startLine", "endLine"}


def test_edit_writes_and_returns_the_reference_keys(agent):
    ws(agent, "a.py").write_text("x = 1\ny = 2\n")
    agent.session.active_sections["/workspace/a.py"] = {"s1"}
    r = agent.call("edit", path="/workspace/a.py", edits=[{"oldText": "y = 2", "newText": "y = 3"}])
    assert list(r.data) == ["detail", "diff", "edits", "firstChangedLine", "patch", "success"]
    assert r["detail"] == "Successfully replaced 1 block(s) in /workspace/a.py."
    assert r["diff"] == " 1 x = 1\n-2 y = 2\n+2 y = 3\n 3 "
    assert r["patch"] == "--- a/workspace/a.py\n+++ b/workspace/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
    assert r["firstChangedLine"] == 2
    assert ws(agent, "a.py").read_text() == "x = 1\ny = 3\n"
    assert "/workspace/a.py" not in agent.session.active_sections


def test_dry_run_then_apply_writes_exactly_the_preview(agent):
    f = ws(agent, "a.py")
    f.write_text("x = 1\n")
    os.chmod(f, 0o640)
    preview = agent.call("edit", path="/workspace/a.py", edits=[{"oldText": "x = 1", "newText": "x = 2"}], dryRun=True)
    assert list(preview.data) == ["applyId", "detail", "diff", "edits", "firstChangedLine", "patch", "success"]
    assert (
        preview["detail"]
        == f"Dry-run: would replace 1 block(s) in /workspace/a.py. Apply with applyId: {preview['applyId']}"
    )
    assert f.read_text() == "x = 1\n"
    applied = agent.call("edit", path="/workspace/a.py", apply=preview["applyId"])
    assert (
        applied["detail"]
        == f"Successfully applied dry-run {preview['applyId']}: replaced 1 block(s) in /workspace/a.py."
    )
    assert applied["content"] == "x = 2\n" and f.read_text() == "x = 2\n"
    assert applied["patch"] == preview["patch"] and applied["edits"] == preview["edits"]
    assert stat.S_IMODE(f.stat().st_mode) == 0o640  # atomic replace keeps permissions
    assert [p.name for p in f.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_stale_unknown_and_other_path_applies_are_refused(agent):
    ws(agent, "a.py").write_text("x = 1\n")
    ws(agent, "b.py").write_text("x = 1\n")
    pid = agent.call("edit", path="/workspace/a.py", edits=[{"oldText": "x", "newText": "y"}], dryRun=True)["applyId"]
    assert agent.call("edit", path="/workspace/a.py", apply="nope").data == {
        "error": "No dry-run found for applyId: nope. Run a dry-run first.",
        "success": False,
    }
    assert agent.call("edit", path="/workspace/b.py", apply=pid)["error"] == (
        "apply path mismatch: dry-run was for /workspace/a.py, but apply targets a different path."
    )
    ws(agent, "a.py").write_text("x = 1  \n")
    assert agent.call("edit", path="/workspace/a.py", apply=pid)["error"] == (
        "File content has changed since the dry-run. Run a new dry-run and apply with the updated applyId."
    )
    assert ws(agent, "a.py").read_text() == "x = 1  \n"


def test_previews_belong_to_their_agent(tmp_path):
    first = cireil.load(make_agent(tmp_path, TOOLS, name="one"))
    other = cireil.load(make_agent(tmp_path, TOOLS, name="two"))
    ws(first, "a.py").write_text("x\n")
    ws(other, "a.py").write_text("x\n")
    pid = first.call("edit", path="/workspace/a.py", edits=[{"oldText": "x", "newText": "y"}], dryRun=True)["applyId"]
    assert other.call("edit", path="/workspace/a.py", apply=pid)["error"].startswith("No dry-run found")


def test_preview_store_is_bounded_oldest_first():
    store = PreviewStore(limit=3)
    ids = [store.add(Preview("/w", "/h", b"", b"", {})) for _ in range(5)]
    assert len(store) == 3 and store.get(ids[0]) is None and store.get(ids[1]) is None and store.get(ids[4])


def test_block_file_edits_the_body_and_keeps_frontmatter_byte_for_byte(agent):
    f = agent.directory / "blocks" / "soul.md"
    f.write_bytes(b'+++\r\ndescription = "soul"   # kept as is\r\n+++\r\nBe kind.\r\nBe brief.\r\n')
    preview = agent.call(
        "edit", path="/blocks/soul.md", edits=[{"oldText": "Be brief.", "newText": "Be clear."}], dryRun=True
    )
    assert (
        preview["patch"]
        == "--- a/blocks/soul.md\n+++ b/blocks/soul.md\n@@ -1,2 +1,2 @@\n Be kind.\r\n-Be brief.\r\n+Be clear.\r\n"
    )
    assert preview["edits"][0]["startLine"] == 2  # body-relative
    applied = agent.call("edit", path="/blocks/soul.md", apply=preview["applyId"])
    assert applied.success, applied.data
    assert applied["patch"] == preview["patch"] and applied["diff"] == preview["diff"]
    assert f.read_bytes() == b'+++\r\ndescription = "soul"   # kept as is\r\n+++\r\nBe kind.\r\nBe clear.\r\n'


def test_block_file_old_text_is_never_searched_in_the_frontmatter(agent):
    r = agent.call("edit", path="/blocks/soul.md", edits=[{"oldText": "description", "newText": "x"}])
    assert r["error"].startswith("Could not find edits[0] in the file.")


def test_apply_checks_the_whole_file_including_frontmatter(agent):
    f = agent.directory / "blocks" / "soul.md"
    pid = agent.call("edit", path="/blocks/soul.md", edits=[{"oldText": "soul body", "newText": "new"}], dryRun=True)[
        "applyId"
    ]
    f.write_text(f.read_text().replace('"The soul block"', '"changed"'))
    assert agent.call("edit", path="/blocks/soul.md", apply=pid)["error"].startswith("File content has changed")


def test_skill_file_keeps_yaml_frontmatter(agent):
    f = agent.directory / "skills" / "notes" / "SKILL.md"
    before = f.read_text()
    r = agent.call("edit", path="/skills/notes/SKILL.md", edits=[{"oldText": "short lists", "newText": "tables"}])
    assert r.success, r.data
    assert f.read_text() == before.replace("short lists", "tables")
    assert "name:" not in r["patch"] and r["patch"].endswith(
        "@@ -1 +1 @@\n-Write notes as short lists.\n+Write notes as tables.\n"
    )


def test_invalid_kept_frontmatter_is_refused_before_writing(agent):
    f = agent.directory / "skills" / "notes" / "SKILL.md"
    f.write_text("---\nname: notes\n---\nbody\n")
    r = agent.call("edit", path="/skills/notes/SKILL.md", edits=[{"oldText": "body", "newText": "b"}])
    assert r["error"] == 'Invalid frontmatter: Invalid key: Expected "description" but received undefined'
    assert f.read_text() == "---\nname: notes\n---\nbody\n"


def test_crlf_file_dry_run_and_apply(agent):
    f = ws(agent, "w.txt")
    f.write_bytes(b"alpha\r\nbeta\r\n")
    pid = agent.call(
        "edit", path="/workspace/w.txt", edits=[{"oldText": "alpha\nbeta\n", "newText": "a\nb\n"}], dryRun=True
    )["applyId"]
    assert agent.call("edit", path="/workspace/w.txt", apply=pid).success
    assert f.read_bytes() == b"a\r\nb\r\n"


def test_legacy_old_text_new_text_is_one_edit(agent):
    ws(agent, "a.py").write_text("x = 1\nx = 1\n")
    r = agent.call("edit", {"path": "/workspace/a.py", "old_text": "x = 1", "new_text": "x = 2", "all": True})
    assert r.success and ws(agent, "a.py").read_text() == "x = 2\nx = 2\n"
    r = agent.call("edit", {"path": "/workspace/a.py", "old_text": "x = 2", "new_text": "x = 3"})
    assert r["error"].startswith("Found 2 matches for edits[0].")


def test_no_edits_missing_file_and_unknown_keys(agent):
    assert agent.call("edit", path="/workspace/hello.txt")["error"] == "No edits provided."
    missing = agent.call("edit", path="/workspace/none.txt", edits=[{"oldText": "a", "newText": "b"}])
    assert missing.data == {
        "error": "File at /workspace/none.txt does not exist.",
        "hint": "Use write to create a new file.",
        "success": False,
    }
    bad = agent.call("edit", path="/workspace/hello.txt", edits=[{"oldText": "a", "newText": "b", "oops": 1}])
    assert bad["error"].startswith('edits.0.oops: Invalid key: unknown parameter "oops"')


@pytest.mark.parametrize("path", ["/workspace/../../etc/passwd", "/etc/passwd", "relative.txt", "/workspace/a\0b"])
def test_hostile_paths_are_refused(agent, path):
    r = agent.call("edit", path=path, edits=[{"oldText": "root", "newText": "x"}])
    assert r["error"].startswith("Access denied"), r.data


def test_read_only_mount_is_refused_for_preview_and_edit(tmp_path):
    agent_dir = make_agent(tmp_path / "a", TOOLS)
    src = tmp_path / "ref"
    src.mkdir()
    (src / "r.txt").write_text("keep\n")
    ctx = make_ctx(agent_dir, mounts=[Mount(src, "ref", "ro")])
    for extra in ({}, {"dryRun": True}):
        r = run("edit", {"path": "/workspace/ref/r.txt", "edits": [{"oldText": "keep", "newText": "x"}], **extra}, ctx)
        assert r["error"] == "Access denied: path '/workspace/ref/r.txt' is on a read-only mount (ref)."
    assert (src / "r.txt").read_text() == "keep\n"


def test_non_utf8_bytes_elsewhere_in_the_file_survive(agent):
    f = ws(agent, "bin.txt")
    f.write_bytes(b"caf\xe9\nx = 1\n")
    assert agent.call("edit", path="/workspace/bin.txt", edits=[{"oldText": "x = 1", "newText": "x = 2"}]).success
    assert f.read_bytes() == b"caf\xe9\nx = 2\n"


# -- cell syntax ---------------------------------------------------------------------------------


def test_cell_blocks_parse_into_edits():
    # the second REPLACE marker is as IPython passes it on after stripping a `>>> ` prompt
    body = "<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\ngone\n=======\n>>>> REPLACE"
    assert parse_cell("/workspace/a.py --dry-run --all", body) == {
        "path": "/workspace/a.py",
        "edits": [
            {"oldText": "a = 1\n", "newText": "a = 2\n", "all": True},
            {"oldText": "gone\n", "newText": "", "all": True},
        ],
        "dryRun": True,
    }


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ("/w/a", "stray\n", "line 1: text outside a block"),
        ("/w/a", "<<<<<<< SEARCH\na\n", "the last block is not closed"),
        ("/w/a", "<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n", "inside a SEARCH part"),
        ("/w/a", "", "no edit blocks"),
        ("/w/a --force", "", "unknown option --force"),
        ("", "", "give exactly one path"),
    ],
)
def test_cell_syntax_errors_say_what_is_wrong(line, body, message):
    with pytest.raises(ValueError, match=message):
        parse_cell(line, body)


def test_skill_file_preview_and_apply_return_the_same_body_patch(agent):
    f = agent.directory / "skills" / "notes" / "SKILL.md"
    before = f.read_text()
    preview = agent.call(
        "edit", path="/skills/notes/SKILL.md", edits=[{"oldText": "short lists", "newText": "lists"}], dryRun=True
    )
    applied = agent.call("edit", path="/skills/notes/SKILL.md", apply=preview["applyId"])
    assert applied.success and applied["patch"] == preview["patch"] and "description" not in preview["patch"]
    assert applied["content"] == f.read_text() == before.replace("short lists", "lists")


def test_a_failed_write_leaves_the_file_whole(agent, monkeypatch):
    f = ws(agent, "a.py")
    f.write_text("x = 1\n")

    def broken_replace(src, dst, **dir_fds):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    r = agent.call("edit", path="/workspace/a.py", edits=[{"oldText": "x = 1", "newText": "x = 2"}])
    assert r.data == {"error": "No space left on device", "success": False}
    assert f.read_text() == "x = 1\n" and sorted(p.name for p in f.parent.iterdir()) == sorted(
        ["a.py", "docs", "hello.txt"]
    )


def test_magic_usage_documents_the_cell_syntax():
    from cireil.kernel.magics.tools import usage_doc
    from cireil.kernel.views.panels import magic_usage

    tool = builtin("edit")
    assert magic_usage(tool) == "%%cireil_edit PATH"
    assert "<<<<<<< SEARCH" in usage_doc(tool) and "--dry-run" in usage_doc(tool)
