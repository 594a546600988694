"""The built-in tools provided so far (list-dir, write, session-info) and the result dict shapes."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

import cireil
from cireil.params import Params, String
from cireil.runtime.base.errors import ToolError
from cireil.runtime.config.sandbox_config import Mount
from cireil.runtime.files import atomic
from cireil.runtime.sessions.state import Session
from cireil.runtime.toolkit.tool import Tool, execute
from conftest import make_agent
from toolctx import make_ctx, run


@pytest.fixture
def ctx(agent_dir):
    return make_ctx(agent_dir)


# -- list-dir ------------------------------------------------------------------------------------


def test_list_dir_workspace(ctx):
    result = run("list-dir", {"path": "/workspace"}, ctx)
    assert result == {
        "entries": [{"name": "docs", "type": "directory"}, {"name": "hello.txt", "type": "file"}],
        "path": "/workspace",
        "success": True,
    }
    assert list(result) == ["entries", "path", "success"]


def test_list_dir_sorts_by_byte_value_and_reports_symlinks(agent_dir, ctx):
    ws = agent_dir / "workspace"
    for name in ("b.txt", "B.txt", "a.txt", "_x", "é.txt"):
        (ws / name).write_text("x")
    (ws / "to-docs").symlink_to("docs")
    (ws / "to-file").symlink_to("hello.txt")
    (ws / "dangling").symlink_to("nowhere")
    (ws / ".hidden").write_text("x")
    entries = run("list-dir", {"path": "/workspace"}, ctx)["entries"]
    names = [e["name"] for e in entries]
    assert names == sorted(names, key=lambda n: n.encode())
    assert names[:3] == [".hidden", "B.txt", "_x"]
    assert names[-1] == "é.txt"
    types = {e["name"]: e["type"] for e in entries}
    assert types["to-docs"] == "symlink"  # a symlink to a directory is still a symlink
    assert types["to-file"] == "symlink"
    assert types["dangling"] == "symlink"
    assert types["docs"] == "directory"
    assert types[".hidden"] == "file"


def test_list_dir_every_root(ctx):
    blocks = run("list-dir", {"path": "/blocks"}, ctx)["entries"]
    assert [e["name"] for e in blocks] == ["identity.md", "long-term.md", "person.md", "soul.md", "style-notes.md"]
    assert run("list-dir", {"path": "/skills"}, ctx)["entries"] == [{"name": "notes", "type": "directory"}]
    assert run("list-dir", {"path": "/memories"}, ctx)["entries"] == []
    assert run("list-dir", {"path": "/tasks/"}, ctx)["entries"] == []
    assert run("list-dir", {"path": "/workspace/docs"}, ctx)["entries"] == [{"name": "guide.md", "type": "file"}]


def test_list_dir_missing_directory_is_empty(ctx):
    assert run("list-dir", {"path": "/workspace/nope"}, ctx) == {
        "entries": [],
        "path": "/workspace/nope",
        "success": True,
    }
    assert run("list-dir", {"path": "/memories/a/b"}, ctx)["entries"] == []


def test_list_dir_on_a_file_is_an_error(ctx):
    result = run("list-dir", {"path": "/workspace/hello.txt"}, ctx)
    assert result == {
        "error": "'/workspace/hello.txt' is not a directory.",
        "hint": "Use read to look at a file.",
        "success": False,
    }


def test_list_dir_bin_depends_on_exec(agent_dir):
    off = make_ctx(agent_dir, binaries=("git", "python3"))
    assert run("list-dir", {"path": "/bin"}, off) == {"entries": [], "path": "/bin", "success": True}
    on = make_ctx(agent_dir, exec_enabled=True, binaries=("git", "python3"))
    assert run("list-dir", {"path": "/bin"}, on) == {
        "entries": [{"name": "git", "type": "symlink"}, {"name": "python3", "type": "symlink"}],
        "path": "/bin",
        "success": True,
    }
    assert run("list-dir", {"path": "/bin/"}, on)["entries"][0] == {"name": "git", "type": "symlink"}


def test_list_dir_system_paths(ctx):
    usr = run("list-dir", {"path": "/usr"}, ctx)
    assert usr["success"] is True
    assert {"name": "bin", "type": "directory"} in usr["entries"]
    for path in ("/etc", "/", "/usr/../etc", "/proc/self", "/bin/../etc"):
        result = run("list-dir", {"path": path}, ctx)
        assert result["success"] is False
        assert result["error"].startswith("Access denied:"), result
    missing = run("list-dir", {"path": "/usr/no-such-dir-here"}, ctx)
    assert missing["success"] is False
    assert "No such file or directory" in missing["error"]


def test_list_dir_refuses_escapes(agent_dir, ctx, tmp_path):
    (agent_dir / "workspace" / "out").symlink_to(tmp_path)
    for path in ("/workspace/..", "/workspace/out", "/workspace/../memories", "workspace", "/blocks/../../"):
        result = run("list-dir", {"path": path}, ctx)
        assert result["success"] is False, path
        assert result["error"].startswith("Access denied:")
        assert str(tmp_path) not in result["error"]


def test_list_dir_mount_targets_are_synthesized(agent_dir, tmp_path):
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "README").write_text("r")
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "a.txt").write_text("a")
    (agent_dir / "workspace" / "proj").write_text("a physical file hidden by the mount")
    mounts = [Mount(src, "proj", "rw"), Mount(ref, "ext/ref", "ro")]
    ctx = make_ctx(agent_dir, mounts=mounts)
    entries = run("list-dir", {"path": "/workspace"}, ctx)["entries"]
    assert entries == [
        {"name": "docs", "type": "directory"},
        {"name": "hello.txt", "type": "file"},
        {"name": "proj", "type": "directory"},  # the physical file is hidden; synthetic entries come last
        {"name": "ext", "type": "directory"},
    ]
    # an intermediate directory that does not exist physically still lists the mount below it
    assert run("list-dir", {"path": "/workspace/ext"}, ctx)["entries"] == [{"name": "ref", "type": "directory"}]
    # inside a mount: the mount source itself
    assert run("list-dir", {"path": "/workspace/proj"}, ctx)["entries"] == [
        {"name": "README", "type": "file"},
        {"name": "lib", "type": "directory"},
    ]
    assert run("list-dir", {"path": "/workspace/./ext/ref"}, ctx)["entries"] == [{"name": "a.txt", "type": "file"}]


def test_list_dir_through_agent_with_sandbox_toml(tmp_path):
    agent = make_agent(tmp_path)
    src = tmp_path / "data"
    src.mkdir()
    (src / "d.csv").write_text("1,2\n")
    (agent / "config" / "sandbox.toml").write_text(
        f'[bwrap]\nbinaries = ["git"]\n[[mounts]]\nsource = "{src}"\ntarget = "data"\nmode = "ro"\n'
    )
    loaded = cireil.load(agent)
    assert loaded.call("list-dir", path="/workspace/data")["entries"] == [{"name": "d.csv", "type": "file"}]
    assert "data" in [e["name"] for e in loaded.call("list-dir", path="/workspace")["entries"]]
    assert loaded.call("list-dir", path="/bin")["entries"] == []  # exec is disabled


def test_list_dir_parameter_errors(ctx):
    assert run("list-dir", {}, ctx) == {
        "error": 'path: Invalid key: Expected "path" but received undefined',
        "issues": [{"message": 'Invalid key: Expected "path" but received undefined', "path": "path"}],
        "success": False,
    }
    result = run("list-dir", {"path": ""}, ctx)
    assert result["error"] == "path: Invalid length: Expected >=1 but received 0"
    assert list(result) == ["error", "issues", "success"]


# -- write ---------------------------------------------------------------------------------------


def test_write_creates_parents(agent_dir, ctx):
    result = run("write", {"path": "/workspace/a/b/c.txt", "content": "hi\n"}, ctx)
    assert result == {"path": "/workspace/a/b/c.txt", "success": True}
    assert (agent_dir / "workspace" / "a" / "b" / "c.txt").read_text() == "hi\n"


def test_write_overwrites_and_accepts_empty_content(agent_dir, ctx):
    target = agent_dir / "workspace" / "hello.txt"
    assert run("write", {"path": "/workspace/hello.txt", "content": "new"}, ctx)["success"] is True
    assert target.read_text() == "new"
    assert run("write", {"path": "/workspace/hello.txt", "content": ""}, ctx)["success"] is True
    assert target.read_bytes() == b""


def test_write_is_utf8_and_keeps_line_endings(agent_dir, ctx):
    run("write", {"path": "/memories/n.md", "content": "café\r\nline\n"}, ctx)
    assert (agent_dir / "memories" / "n.md").read_bytes() == "café\r\nline\n".encode()


def test_write_keeps_permissions_and_new_files_follow_umask(agent_dir, ctx):
    target = agent_dir / "workspace" / "hello.txt"
    target.chmod(0o640)
    run("write", {"path": "/workspace/hello.txt", "content": "x"}, ctx)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        run("write", {"path": "/workspace/new.txt", "content": "x"}, ctx)
    finally:
        os.umask(old)
    assert stat.S_IMODE((agent_dir / "workspace" / "new.txt").stat().st_mode) == 0o640


def test_write_failure_leaves_old_content_and_no_temp_files(agent_dir, ctx, monkeypatch):
    target = agent_dir / "workspace" / "hello.txt"

    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", no_space)
    result = run("write", {"path": "/workspace/hello.txt", "content": "half"}, ctx)
    assert result == {"error": "No space left on device", "success": False}
    assert target.read_text() == "hello\n"
    assert sorted(os.listdir(agent_dir / "workspace")) == ["docs", "hello.txt"]


def test_write_failure_on_rename_cleans_up(agent_dir, ctx, monkeypatch):
    def refuse(src, dst, **dir_fds):
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(atomic.os, "replace", refuse)
    result = run("write", {"path": "/workspace/hello.txt", "content": "x"}, ctx)
    assert result == {"error": "EACCES: cannot write '/workspace/hello.txt': Permission denied", "success": False}
    assert sorted(os.listdir(agent_dir / "workspace")) == ["docs", "hello.txt"]
    assert (agent_dir / "workspace" / "hello.txt").read_text() == "hello\n"


def test_write_unencodable_content_leaves_the_file(agent_dir, ctx):
    result = run("write", {"path": "/workspace/hello.txt", "content": "bad \udc80 surrogate"}, ctx)
    assert result["success"] is False
    assert (agent_dir / "workspace" / "hello.txt").read_text() == "hello\n"


def test_write_through_an_inside_symlink_keeps_the_link(agent_dir, ctx):
    ws = agent_dir / "workspace"
    (ws / "link.txt").symlink_to("hello.txt")
    run("write", {"path": "/workspace/link.txt", "content": "via link"}, ctx)
    assert (ws / "link.txt").is_symlink()
    assert (ws / "hello.txt").read_text() == "via link"


def test_write_never_creates_a_file_outside_through_a_dangling_link(agent_dir, ctx, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (agent_dir / "workspace" / "trap").symlink_to(outside / "planted.txt")
    result = run("write", {"path": "/workspace/trap", "content": "x"}, ctx)
    assert result["success"] is False
    assert result["error"].startswith("Access denied:")
    assert str(tmp_path) not in result["error"]
    assert list(outside.iterdir()) == []


def test_write_to_a_directory_is_an_error(ctx):
    assert run("write", {"path": "/workspace/docs", "content": "x"}, ctx) == {
        "error": "'/workspace/docs' is a directory.",
        "hint": "Give the path of a file inside it.",
        "success": False,
    }
    assert run("write", {"path": "/workspace", "content": "x"}, ctx)["success"] is False


def test_write_refused_on_read_only_mount(agent_dir, tmp_path):
    src = tmp_path / "ref"
    src.mkdir()
    (src / "a.txt").write_text("orig")
    ctx = make_ctx(agent_dir, mounts=[Mount(src, "ref", "ro")])
    for path in ("/workspace/ref/a.txt", "/workspace/./ref/a.txt", "/workspace/ref/new.txt"):
        result = run("write", {"path": path, "content": "x"}, ctx)
        assert result == {"error": f"Access denied: path '{path}' is on a read-only mount (ref).", "success": False}
    assert (src / "a.txt").read_text() == "orig"
    assert sorted(os.listdir(src)) == ["a.txt"]


def test_write_on_rw_mount(agent_dir, tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    ctx = make_ctx(agent_dir, mounts=[Mount(src, "proj", "rw")])
    assert run("write", {"path": "/workspace/proj/sub/a.txt", "content": "x"}, ctx)["success"] is True
    assert (src / "sub" / "a.txt").read_text() == "x"


@pytest.mark.parametrize(
    "path",
    [
        "/blocks/notes.txt",
        "/blocks/notes",
        "/blocks",
        "/blocks/",
        "/blocks/conditional/x.MD.txt",
        "//blocks/notes.txt",
        "/blocks//notes.txt",
        "/blocks/x.md/../notes.txt",
        "/blocks/x.txt/.",
    ],
)
def test_write_blocks_must_end_md(agent_dir, ctx, path):
    result = run("write", {"path": path, "content": "x"}, ctx)
    assert result["success"] is False, path
    assert result["error"] == "path: Files in /blocks/ must end with .md extension"
    assert result["issues"] == [{"message": "Files in /blocks/ must end with .md extension", "path": "path"}]
    assert sorted(os.listdir(agent_dir / "blocks")) == sorted(
        f"{b}.md" for b in ("soul", "identity", "person", "long-term", "style-notes")
    )


def test_write_block_body_keeps_frontmatter(agent_dir, ctx):
    result = run("write", {"path": "/blocks/soul.md", "content": "A new soul.\n"}, ctx)
    assert result == {"path": "/blocks/soul.md", "success": True}
    assert (agent_dir / "blocks" / "soul.md").read_text() == '+++\ndescription = "The soul block"\n+++\nA new soul.\n'
    run("write", {"path": "/blocks/./soul.md", "content": ""}, ctx)
    assert (agent_dir / "blocks" / "soul.md").read_text() == '+++\ndescription = "The soul block"\n+++\n'


def test_write_block_with_new_frontmatter(agent_dir, ctx):
    content = '+++\ndescription = "Renewed"\nextra = 1\n+++\nbody\n'
    assert run("write", {"path": "/blocks/soul.md", "content": content}, ctx)["success"] is True
    assert (agent_dir / "blocks" / "soul.md").read_text() == content
    empty = '+++\ndescription = ""\n+++\n'
    assert run("write", {"path": "/blocks/conditional/night.md", "content": empty}, ctx)["success"] is True


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("+++\ndescription = 3\n+++\nbody", 'Invalid type: Expected "description" to be a non-empty string'),
        ('+++\ntitle = "x"\n+++\nbody', 'Invalid key: Expected "description" but received undefined'),
        ('+++\ndescription = "x"\nbody', "missing closing '+++'"),
        ("+++\ndescription = \n+++\nbody", "TOML parse error: "),
    ],
)
def test_write_block_invalid_frontmatter_refused(agent_dir, ctx, content, reason):
    before = (agent_dir / "blocks" / "soul.md").read_text()
    result = run("write", {"path": "/blocks/soul.md", "content": content}, ctx)
    assert result["success"] is False
    assert result["error"].startswith(f"Invalid frontmatter: {reason}")
    assert "+++" in result["hint"]
    assert (agent_dir / "blocks" / "soul.md").read_text() == before


def test_write_block_over_broken_existing_frontmatter_is_refused(agent_dir, ctx):
    (agent_dir / "blocks" / "soul.md").write_text('+++\nname = "no description"\n+++\nold\n')
    result = run("write", {"path": "/blocks/soul.md", "content": "new body"}, ctx)
    assert result["error"] == 'Invalid frontmatter: Invalid key: Expected "description" but received undefined'


def test_write_block_without_any_frontmatter_is_written_as_given(agent_dir, ctx):
    (agent_dir / "blocks" / "plain.md").write_text("no frontmatter\n")
    assert run("write", {"path": "/blocks/plain.md", "content": "still none"}, ctx)["success"] is True
    assert (agent_dir / "blocks" / "plain.md").read_text() == "still none"
    assert run("write", {"path": "/blocks/conditional/new.md", "content": "bare"}, ctx)["success"] is True
    assert (agent_dir / "blocks" / "conditional" / "new.md").read_text() == "bare"


def test_write_skill_body_keeps_yaml_frontmatter(agent_dir, ctx):
    assert run("write", {"path": "/skills/notes/SKILL.md", "content": "Use bullets.\n"}, ctx)["success"] is True
    assert (agent_dir / "skills" / "notes" / "SKILL.md").read_text() == (
        "---\nname: notes\ndescription: Keep notes tidy.\n---\nUse bullets.\n"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('---\nname: ""\ndescription: d\n---\nx', 'Invalid type: Expected "name" to be a non-empty string'),
        ("---\nname: n\n---\nx", 'Invalid key: Expected "description" but received undefined'),
        ("---\nname: n\ndescription: 5\n---\nx", 'Invalid type: Expected "description" to be a non-empty string'),
        ("---\n- a\n- b\n---\nx", "frontmatter must be a mapping with name and description"),
        ("---\nname: [unclosed\n---\nx", "YAML parse error: "),
        ("---\nname: n\ndescription: d\n", "missing closing '---'"),
    ],
)
def test_write_skill_invalid_frontmatter_refused(agent_dir, ctx, content, reason):
    result = run("write", {"path": "/skills/notes/SKILL.md", "content": content}, ctx)
    assert result["success"] is False
    assert result["error"].startswith(f"Invalid frontmatter: {reason}")
    assert "YAML" in result["hint"]


def test_write_new_skill_and_other_skill_files(agent_dir, ctx):
    good = "---\nname: deploy\ndescription: Ship it.\nversion: 2\n---\nSteps.\n"
    assert run("write", {"path": "/skills/deploy/SKILL.md", "content": good}, ctx)["success"] is True
    # only SKILL.md carries frontmatter rules; other files in a skill are free-form
    assert run("write", {"path": "/skills/deploy/notes.md", "content": "---\nbroken"}, ctx)["success"] is True
    assert run("write", {"path": "/workspace/x.md", "content": "+++\nnot toml"}, ctx)["success"] is True


def test_write_clears_active_sections_of_that_file_only(agent_dir):
    session = Session(id="test:1")
    session.active_sections = {"/workspace/guide.md": {"intro"}, "/workspace/other.md": {"a"}}
    ctx = make_ctx(agent_dir, session=session)
    run("write", {"path": "/workspace/./guide.md", "content": "x"}, ctx)
    assert session.active_sections == {"/workspace/other.md": {"a"}}


def test_failed_write_keeps_active_sections(agent_dir):
    session = Session(id="test:1")
    session.active_sections = {"/blocks/soul.md": {"a"}}
    ctx = make_ctx(agent_dir, session=session)
    run("write", {"path": "/blocks/soul.md", "content": "+++\nbad"}, ctx)
    assert session.active_sections == {"/blocks/soul.md": {"a"}}


def test_write_parameter_errors(ctx):
    result = run("write", {"path": "/workspace/x"}, ctx)
    assert result == {
        "error": 'content: Invalid key: Expected "content" but received undefined',
        "issues": [{"message": 'Invalid key: Expected "content" but received undefined', "path": "content"}],
        "success": False,
    }
    result = run("write", {"path": "/workspace/x", "content": 5, "mode": "a"}, ctx)
    assert [i["path"] for i in result["issues"]] == ["content", "mode"]


# -- session-info --------------------------------------------------------------------------------


def test_session_info_default_session_is_remote(agent_dir):
    assert cireil.load(agent_dir).call("session-info").data == {
        "platform": "remote",
        "session_id": "notebook:main",
        "success": True,
    }


@pytest.mark.parametrize(
    ("session_id", "platform"),
    [
        ("internal:daily", "internal"),  # named internal session
        ("cron:job1", "internal"),  # scheduled internal session
        ("tui", "tui"),
        ("notebook:review", "remote"),  # adapter-owned
        ("cli:batch", "remote"),
    ],
)
def test_session_info_other_sessions(agent_dir, session_id, platform):
    # the session comes from the agent, as a turn's does: the platform is decided from its id, not given here
    agent = cireil.load(agent_dir)
    agent.use_session(session_id)
    expected = {"platform": platform, "session_id": session_id, "success": True}
    assert agent.call("session-info").data == expected
    agent.close()
    again = cireil.load(agent_dir)  # and the same after it went through sessions.db
    again.use_session(session_id)
    assert again.call("session-info").data == expected
    again.close()


def test_session_info_takes_no_parameters(ctx):
    result = run("session-info", {"verbose": True}, ctx)
    assert result["success"] is False
    assert result["error"] == 'verbose: Invalid key: unknown parameter "verbose" (expected: no parameters)'
    assert run("session-info", None, ctx)["success"] is True


# -- result shapes for any tool ----------------------------------------------------------------------


def python_tool(fn, params=None) -> Tool:
    async def runner(args, ctx):
        return fn(args, ctx)

    return Tool(name="probe", description="test", params=params or Params(), run=runner, origin="python")


def test_tool_error_with_and_without_hint(ctx):
    def with_hint(args, ctx):
        raise ToolError("nope", hint="try again")

    def without_hint(args, ctx):
        raise ToolError("nope")

    assert run(python_tool(with_hint), {}, ctx) == {"error": "nope", "hint": "try again", "success": False}
    result = run(python_tool(without_hint), {}, ctx)
    assert result == {"error": "nope", "success": False}
    assert list(result) == ["error", "success"]


def test_tool_error_host_paths_are_scrubbed(agent_dir, ctx):
    def leak(args, ctx):
        raise ToolError(f"bad {agent_dir}/workspace/x", hint=f"see {agent_dir}/memories")

    assert run(python_tool(leak), {}, ctx) == {
        "error": "bad <sandbox>/workspace/x",
        "hint": "see <sandbox>/memories",
        "success": False,
    }


def test_unexpected_exceptions_become_scrubbed_results(agent_dir, ctx):
    def boom(args, ctx):
        raise RuntimeError(f"exploded at {agent_dir}/workspace/a and {os.path.realpath(agent_dir)}/blocks")

    def missing(args, ctx):
        open(agent_dir / "workspace" / "missing.txt")  # noqa: SIM115

    def bare(args, ctx):
        raise ValueError()

    assert run(python_tool(boom), {}, ctx) == {
        "error": "exploded at <sandbox>/workspace/a and <sandbox>/blocks",
        "success": False,
    }
    assert run(python_tool(missing), {}, ctx) == {
        "error": "No such file or directory: '<sandbox>/workspace/missing.txt'",
        "success": False,
    }
    result = run(python_tool(bare), {}, ctx)
    assert result["success"] is False
    assert result["error"].startswith("ValueError (at test_tools_builtin.py:")


def test_non_dict_result_is_a_failure(ctx):
    result = run(python_tool(lambda args, ctx: ["not", "a", "dict"]), {}, ctx)
    assert result == {"error": "tool 'probe' returned list, not an object", "success": False}


def test_results_are_returned_unchanged(ctx):
    payload = {"value": 1, "nested": {"a": [1, 2]}}
    assert run(python_tool(lambda args, ctx: payload), {}, ctx) is payload
    result = run(python_tool(lambda args, ctx: {"ok": True}), {}, ctx)
    assert "success" not in result  # a result without success is not a failure, and nothing adds one


def test_arguments_reach_the_tool_validated(ctx):
    seen = {}

    def capture(args, ctx):
        seen.update(args)
        return {"success": True}

    tool = python_tool(capture, Params(path=String(), flag=String(default="d")))
    run(tool, {"path": "/x"}, ctx)
    assert seen == {"path": "/x", "flag": "d"}


def test_cancellation_is_not_turned_into_a_result(ctx):
    async def slow(args, ctx):
        await asyncio.sleep(10)
        return {"success": True}

    tool = Tool(name="slow", description="d", params=Params(), run=slow)

    async def main():
        task = asyncio.ensure_future(execute(tool, {}, ctx))
        await asyncio.sleep(0.01)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
