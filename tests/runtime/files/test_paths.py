"""The sandbox path model against hostile input: `..`, odd spellings, symlinks, loops, mounts.

The property tests build random symlink layouts inside and around an agent and check two things
for every generated path: a path that resolves names a host path that really lies (as the kernel
would follow it) inside the agent root it belongs to or its mount source; a refused one raises
ToolError with `Access denied` and no host path in the message. A write through the tool on top
never creates or changes anything outside the allowed places.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cireil.runtime.base.errors import ToolError
from cireil.runtime.config.sandbox_config import Mount, SandboxConfig
from cireil.runtime.config.tools_config import ToolsConfig
from cireil.runtime.files import paths as paths_module
from cireil.runtime.files.paths import ROOTS, SandboxPaths, normalize
from cireil.runtime.sessions.state import Session
from cireil.runtime.toolkit.registry import builtin
from cireil.runtime.toolkit.tool import ToolContext, execute
from conftest import make_agent


def denied(paths: SandboxPaths, path: str, *, write: bool = False, hide: Path | None = None) -> str:
    with pytest.raises(ToolError) as info:
        (paths.resolve_for_write if write else paths.resolve)(path)
    message = info.value.message
    assert message.startswith("Access denied:"), message
    if hide is not None:
        assert str(hide) not in message.replace(path, "")
    return message


@pytest.fixture
def world(tmp_path):
    """An agent, a secret outside it, and two mount sources (rw and ro) next to it."""
    agent = make_agent(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    proj = tmp_path / "proj-src"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "main.py").write_text("print(1)\n")
    ro = tmp_path / "ro-src"
    ro.mkdir()
    (ro / "ref.txt").write_text("ref\n")
    mounts = [Mount(proj, "proj", "rw"), Mount(ro, "ref/docs", "ro")]
    return {
        "tmp": tmp_path,
        "agent": agent,
        "outside": outside,
        "proj": proj,
        "ro": ro,
        "paths": SandboxPaths(agent, mounts),
        "plain": SandboxPaths(agent),
    }


# -- the plain roots -----------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
def test_each_root_maps_to_its_folder(world, root):
    r = world["plain"].resolve(f"/{root}")
    assert r.host == Path(os.path.realpath(world["agent"] / root))
    assert (r.root, r.sandbox, r.mount) == (root, f"/{root}", None)
    r = world["plain"].resolve(f"/{root}/new/file.md")
    assert r.host == Path(os.path.realpath(world["agent"] / root)) / "new" / "file.md"


@pytest.mark.parametrize(
    "spelling",
    [
        "/workspace/docs/guide.md",
        "//workspace//docs/guide.md",
        "/workspace/./docs/./guide.md",
        "/./workspace/docs/guide.md",
        "/workspace/docs/../docs/guide.md",
        "/workspace/x/../docs/guide.md",
        "/workspace/docs/guide.md/.",
    ],
)
def test_equivalent_spellings_resolve_alike(world, spelling):
    r = world["plain"].resolve(spelling)
    assert r.host == Path(os.path.realpath(world["agent"] / "workspace" / "docs" / "guide.md"))
    assert r.sandbox == "/workspace/docs/guide.md"


def test_trailing_slash_and_root_forms(world):
    assert world["plain"].resolve("/workspace/").sandbox == "/workspace"
    assert world["plain"].resolve("/workspace/docs/").sandbox == "/workspace/docs"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("workspace/hello.txt", "is outside the sandbox"),
        ("hello.txt", "is outside the sandbox"),
        ("./workspace/x", "is outside the sandbox"),
        ("", "is outside the sandbox"),
        ("/", "is outside the sandbox"),
        ("/etc/passwd", "is outside the sandbox"),
        ("/tmp/x", "is outside the sandbox"),
        ("/usr/bin", "is outside the sandbox"),
        ("/bin/sh", "is outside the sandbox"),
        ("/workspacex/a", "is outside the sandbox"),
        ("/Workspace/a", "is outside the sandbox"),
        ("/workspace/../../etc/passwd", "attempts to escape the sandbox"),
        ("/workspace/..", "attempts to escape the sandbox"),
        ("/workspace/../etc", "attempts to escape the sandbox"),
        ("/blocks/../memories/x", "escaped the /blocks sandbox area"),
        ("/workspace/../memories", "escaped the /workspace sandbox area"),
        ("/memories/a/../../workspace/x", "escaped the /memories sandbox area"),
        ("/../workspace/hello.txt", "is outside the sandbox"),
        ("/workspace/a\0b", "is outside the sandbox"),
        ("\0/workspace", "is outside the sandbox"),
    ],
)
def test_hostile_paths_are_refused(world, path, why):
    message = denied(world["paths"], path, hide=world["tmp"])
    assert message == f"Access denied: path '{path}' {why}."


def test_non_string_paths_are_refused(world):
    for value in (None, 3, b"/workspace/x"):
        with pytest.raises(ToolError, match=r"^Access denied:"):
            world["paths"].resolve(value)  # type: ignore[arg-type]


def test_normalize():
    assert normalize("//a//b/./c/../d") == "/a/b/d"
    assert normalize("///x") == "/x"
    assert normalize("/..") == "/"


# -- symlinks -------------------------------------------------------------------------------------


def test_symlink_final_component_to_outside_file(world):
    ws = world["agent"] / "workspace"
    (ws / "leak").symlink_to(world["outside"] / "secret.txt")
    assert denied(world["paths"], "/workspace/leak", hide=world["tmp"]).endswith(
        "resolves outside the sandbox via symlink."
    )


def test_relative_symlink_climbing_out(world):
    ws = world["agent"] / "workspace"
    (ws / "up").symlink_to("../../outside")
    denied(world["paths"], "/workspace/up", hide=world["tmp"])
    denied(world["paths"], "/workspace/up/secret.txt", hide=world["tmp"])
    denied(world["paths"], "/workspace/up/new.txt", write=True, hide=world["tmp"])


def test_symlink_in_an_ancestor(world):
    ws = world["agent"] / "workspace"
    (ws / "docs" / "deep").symlink_to(world["outside"])
    denied(world["paths"], "/workspace/docs/deep/secret.txt", hide=world["tmp"])
    denied(world["paths"], "/workspace/docs/deep/not/yet/there.txt", hide=world["tmp"])


def test_symlink_into_another_root_is_refused(world):
    ws = world["agent"] / "workspace"
    (ws / "mem").symlink_to("../memories")
    (ws / "blk").symlink_to(world["agent"] / "blocks" / "soul.md")
    denied(world["paths"], "/workspace/mem", hide=world["tmp"])
    denied(world["paths"], "/workspace/mem/x.md", hide=world["tmp"])
    denied(world["paths"], "/workspace/blk", hide=world["tmp"])


def test_symlink_to_the_agent_root_or_its_config_is_refused(world):
    ws = world["agent"] / "workspace"
    (ws / "agent").symlink_to(world["agent"])
    denied(world["paths"], "/workspace/agent/config/tools.toml", hide=world["tmp"])
    (world["agent"] / "memories" / "cfg").symlink_to("../config")
    denied(world["paths"], "/memories/cfg/tools.toml", hide=world["tmp"])


def test_symlink_within_the_same_root_is_followed(world):
    ws = world["agent"] / "workspace"
    (ws / "alias").symlink_to("docs")
    r = world["paths"].resolve("/workspace/alias/guide.md")
    assert r.host == Path(os.path.realpath(ws / "docs" / "guide.md"))
    assert r.sandbox == "/workspace/alias/guide.md"


def test_dangling_symlink_outside_is_refused(world):
    ws = world["agent"] / "workspace"
    (ws / "dangle").symlink_to(world["outside"] / "created-by-agent.txt")
    denied(world["paths"], "/workspace/dangle", write=True, hide=world["tmp"])
    (ws / "dangle-rel").symlink_to("../../outside/nope/new.txt")
    denied(world["paths"], "/workspace/dangle-rel", write=True, hide=world["tmp"])


def test_dangling_symlink_inside_resolves_to_its_target(world):
    ws = world["agent"] / "workspace"
    (ws / "later").symlink_to("docs/later.md")
    r = world["paths"].resolve("/workspace/later")
    assert r.host == Path(os.path.realpath(ws)) / "docs" / "later.md"


@pytest.mark.parametrize(
    "layout",
    [
        {"loop": "loop"},
        {"a": "b", "b": "a"},
        {"a": "b/x", "b": "a/y"},
    ],
)
def test_symlink_loops_never_escape(world, layout):
    ws = world["agent"] / "workspace"
    for name, target in layout.items():
        (ws / name).symlink_to(target)
    for name in layout:
        for path in (f"/workspace/{name}", f"/workspace/{name}/x", f"/workspace/{name}/../hello.txt"):
            try:
                r = world["paths"].resolve(path)
            except ToolError as exc:
                assert exc.message.startswith("Access denied:")
                assert str(world["tmp"]) not in exc.message
            else:
                assert os.path.realpath(r.host) == str(r.host)
                assert str(r.host).startswith(os.path.realpath(ws))


def test_loop_cannot_smuggle_a_path_through_an_outside_symlink(world):
    # realpath gives up on the loop `y` and collapses the rest lexically, which yields
    # <workspace>/esc/file, a path that still goes through the `esc` symlink to the outside.
    ws = world["agent"] / "workspace"
    (ws / "y").symlink_to("y")
    (ws / "esc").symlink_to(world["outside"])
    (ws / "x").symlink_to("y/../esc/planted.txt")
    denied(world["paths"], "/workspace/x", write=True, hide=world["tmp"])
    denied(world["paths"], "/workspace/x", hide=world["tmp"])


# -- mounts ---------------------------------------------------------------------------------------


def test_mount_paths_map_to_the_source(world):
    proj = os.path.realpath(world["proj"])
    for spelling in (
        "/workspace/proj/src/main.py",
        "/workspace/./proj/src/main.py",
        "//workspace/proj//src/main.py",
        "/workspace/proj/../proj/src/main.py",
        "/workspace/docs/../proj/src/main.py",
    ):
        r = world["paths"].resolve(spelling)
        assert r.host == Path(proj) / "src" / "main.py", spelling
        assert r.mount is not None and r.mount.target == "proj"
    assert world["paths"].resolve("/workspace/proj").host == Path(proj)


def test_dot_spelling_does_not_bypass_a_read_only_mount(world):
    # Upstream matched the raw string, so /workspace/./ref/docs fell through to the agent's own folder.
    for spelling in (
        "/workspace/ref/docs/x.txt",
        "/workspace/./ref/docs/x.txt",
        "/workspace/ref/./docs/x.txt",
        "//workspace/ref//docs/x.txt",
        "/workspace/ref/docs/../docs/x.txt",
    ):
        r = world["paths"].resolve(spelling)
        assert r.read_only and r.mount is not None and r.mount.target == "ref/docs"
        message = denied(world["paths"], spelling, write=True, hide=world["tmp"])
        assert message == f"Access denied: path '{spelling}' is on a read-only mount (ref/docs)."
    denied(world["paths"], "/workspace/ref/docs", write=True)


def test_read_only_mount_allows_reading_and_rw_mount_allows_writing(world):
    assert world["paths"].resolve("/workspace/ref/docs/ref.txt").host == Path(os.path.realpath(world["ro"])) / "ref.txt"
    r = world["paths"].resolve_for_write("/workspace/proj/new.txt")
    assert r.host == Path(os.path.realpath(world["proj"])) / "new.txt"


def test_path_next_to_a_mount_is_not_in_it(world):
    r = world["paths"].resolve("/workspace/projx/a")
    assert r.mount is None
    assert r.host == Path(os.path.realpath(world["agent"] / "workspace")) / "projx" / "a"
    r = world["paths"].resolve("/workspace/ref/other.txt")
    assert r.mount is None
    world["paths"].resolve_for_write("/workspace/ref/other.txt")


def test_escaping_a_mount_by_dotdot_stays_in_the_workspace(world):
    r = world["paths"].resolve("/workspace/proj/../hello.txt")
    assert r.mount is None and r.host.name == "hello.txt"
    denied(world["paths"], "/workspace/proj/../../outside/secret.txt", hide=world["tmp"])


def test_symlink_inside_a_mount_source_pointing_out(world):
    (world["proj"] / "leak").symlink_to(world["outside"])
    (world["proj"] / "up").symlink_to("..")
    message = denied(world["paths"], "/workspace/proj/leak/secret.txt", hide=world["tmp"])
    assert message.endswith("resolves outside the mount via symlink.")
    denied(world["paths"], "/workspace/proj/up/outside/secret.txt", hide=world["tmp"])
    denied(world["paths"], "/workspace/proj/leak/new.txt", write=True, hide=world["tmp"])


def test_symlink_inside_a_mount_source_staying_inside(world):
    (world["proj"] / "code").symlink_to("src")
    r = world["paths"].resolve("/workspace/proj/code/main.py")
    assert r.host == Path(os.path.realpath(world["proj"])) / "src" / "main.py"


def test_mount_source_that_is_itself_a_symlink(world):
    link = world["tmp"] / "proj-link"
    link.symlink_to(world["proj"])
    paths = SandboxPaths(world["agent"], [Mount(link, "proj", "rw")])
    r = paths.resolve("/workspace/proj/src/main.py")
    assert r.host == Path(os.path.realpath(world["proj"])) / "src" / "main.py"
    # Inside the source, a link back to the source via its symlinked name is fine; one out is not.
    (world["proj"] / "self").symlink_to(link)
    assert paths.resolve("/workspace/proj/self/src/main.py").host == r.host
    (world["proj"] / "out").symlink_to(world["outside"])
    denied(paths, "/workspace/proj/out/secret.txt", hide=world["tmp"])


def test_missing_mount_source_resolves_but_stays_in_it(world):
    paths = SandboxPaths(world["agent"], [Mount(world["tmp"] / "gone", "gone", "rw")])
    r = paths.resolve("/workspace/gone/a.txt")
    assert r.host == Path(os.path.realpath(world["tmp"])) / "gone" / "a.txt"


def test_workspace_symlink_into_a_mount_source_is_refused(world):
    # The mount source is reachable only through its mount target, not through a link in the workspace.
    (world["agent"] / "workspace" / "p").symlink_to(world["proj"])
    denied(world["paths"], "/workspace/p/src/main.py", hide=world["tmp"])


def test_mount_children(world):
    paths = world["paths"]
    assert paths.mount_children("/workspace") == ["proj", "ref"]
    assert paths.mount_children("/workspace/ref") == ["docs"]
    assert paths.mount_children("/workspace/proj") == []
    assert paths.mount_children("/workspace/re") == []
    assert paths.mount_children("/memories") == []


# -- system paths (list-dir only) --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/usr", "/usr/bin", "/usr/./bin", "//usr//bin", "/usr/bin/"])
def test_system_paths_allowed(world, path):
    assert world["paths"].resolve_system(path) == Path(normalize(path))


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc", "is outside the sandbox"),
        ("/usrx", "is outside the sandbox"),
        ("usr", "is outside the sandbox"),
        ("/", "is outside the sandbox"),
        ("/usr/../etc", "contains path traversal"),
        ("/usr/bin/..", "contains path traversal"),
        ("/usr/\0", "is outside the sandbox"),
    ],
)
def test_system_paths_refused(world, path, why):
    with pytest.raises(ToolError) as info:
        world["paths"].resolve_system(path)
    assert info.value.message == f"Access denied: path '{path}' {why}."


def test_lib_symlinked_into_usr_is_allowed(world):
    if not os.path.islink("/lib"):
        pytest.skip("/lib is not a symlink here")
    assert world["paths"].resolve_system("/lib") == Path("/lib")


def test_system_path_symlinks_out_are_refused(world, monkeypatch):
    sysroot = world["tmp"] / "sys"
    (sysroot / "share").mkdir(parents=True)
    (sysroot / "etc-link").symlink_to(world["outside"])
    monkeypatch.setattr(paths_module, "SYSTEM_ROOTS", (str(sysroot),))
    paths = world["paths"]
    assert paths.resolve_system(f"{sysroot}/share") == sysroot / "share"
    with pytest.raises(ToolError, match="resolves outside the sandbox via symlink"):
        paths.resolve_system(f"{sysroot}/etc-link")
    with pytest.raises(ToolError, match="resolves outside the sandbox via symlink"):
        paths.resolve_system(f"{sysroot}/etc-link/missing/dir")


# -- messages never show host paths -----------------------------------------------------------------


def test_scrub_replaces_agent_root_and_mount_sources(world):
    paths = world["paths"]
    agent = world["agent"]
    assert paths.scrub(f"ENOENT: '{agent}/workspace/x'") == "ENOENT: '<sandbox>/workspace/x'"
    assert paths.scrub(f"'{os.path.realpath(agent)}/memories'") == "'<sandbox>/memories'"
    assert paths.scrub(f"at {world['proj']}/src") == "at /workspace/proj/src"
    assert paths.scrub(f"at {world['ro']}/ref.txt") == "at /workspace/ref/docs/ref.txt"


# -- property-based: hostile paths over random symlink layouts ------------------------------------------

LINK_NAMES = ("l1", "l2", "l3")
SEGMENTS = ("..", ".", "", "sub", "x.md", "hello.txt", "proj", "ref", "docs", "outside", "loop", "esc", *LINK_NAMES)
LINK_DIRS = ("workspace", "workspace/sub", "memories", "blocks", "@proj", "@proj/sub", "@ro")
ABS_TARGETS = (
    "@outside",
    "@outside/secret.txt",
    "@outside/new",
    "@agent",
    "@agent/config",
    "@agent/memories",
    "@proj",
    "@proj/sub",
    "@ro",
    "@tmp",
    "/etc",
    "/",
    "@agent/workspace/sub",
    "@proj-link",
)

# Every link folder also holds `loop -> loop` and `esc -> <outside>`, so targets such as
# `loop/../esc/f` (realpath gives up on the loop and collapses the rest lexically) come up often.
relative_target = st.lists(
    st.sampled_from(("..", ".", "sub", "x", "outside", "loop", "esc", *LINK_NAMES)), min_size=1, max_size=5
).map("/".join)
link_target = st.one_of(st.sampled_from(ABS_TARGETS), relative_target)
layout_strategy = st.lists(st.tuples(st.sampled_from(LINK_DIRS), st.sampled_from(LINK_NAMES), link_target), max_size=6)
sandbox_path = st.builds(
    lambda first, rest, lead: lead + "/".join([first, *rest]),
    st.sampled_from((*ROOTS, "..", ".", "", "etc", "tmp")),
    st.lists(st.sampled_from(SEGMENTS), max_size=8),
    st.sampled_from(("/", "//", "/./")),
)


def _build(base: Path, layout) -> dict:
    agent = make_agent(base, name="agent")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (agent / "workspace" / "sub").mkdir()
    proj = base / "proj-src"
    (proj / "sub").mkdir(parents=True)
    (proj / "file.txt").write_text("p\n")
    ro = base / "ro-src"
    ro.mkdir()
    (ro / "ref.txt").write_text("r\n")
    (base / "proj-link").symlink_to(proj)
    where = {"@outside": outside, "@agent": agent, "@proj": proj, "@ro": ro, "@tmp": base}
    where["@proj-link"] = base / "proj-link"

    def place(spec: str) -> Path:
        head, _, tail = spec.partition("/")
        if head in where:
            return where[head] / tail if tail else where[head]
        return agent / spec

    for directory in LINK_DIRS:
        (place(directory) / "loop").symlink_to("loop")
        (place(directory) / "esc").symlink_to(outside)
    for directory, name, target in layout:
        link = place(directory) / name
        if os.path.lexists(link):
            continue
        text = str(place(target)) if target.startswith("@") else target
        link.symlink_to(text)
    mounts = [Mount(base / "proj-link", "proj", "rw"), Mount(ro, "ref/docs", "ro")]
    return {"agent": agent, "outside": outside, "proj": proj, "ro": ro, "base": base, "mounts": mounts}


def _allowed_boundary(w: dict, resolved) -> str:
    if resolved.mount is not None:
        return os.path.realpath(resolved.mount.source)
    return os.path.realpath(w["agent"] / resolved.root)


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def _snapshot(*dirs: Path) -> dict:
    """Every entry (not following symlinks) under `dirs`, with file contents."""
    out = {}
    for top in dirs:
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                if os.path.islink(p):
                    out[p] = ("link", os.readlink(p))
                elif os.path.isfile(p):
                    out[p] = ("file", Path(p).read_bytes())
                else:
                    out[p] = ("dir", None)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layout_strategy, probes=st.lists(sandbox_path, min_size=1, max_size=8))
@example(layout=[("workspace", "l1", "loop/../esc/x")], probes=["/workspace/l1"])
def test_property_resolved_paths_stay_inside_their_root(layout, probes):
    with tempfile.TemporaryDirectory() as tmp:
        w = _build(Path(tmp), layout)
        paths = SandboxPaths(w["agent"], w["mounts"])
        for probe in probes:
            try:
                resolved = paths.resolve(probe)
            except ToolError as exc:
                assert exc.message.startswith("Access denied:"), exc.message
                assert tmp not in exc.message.replace(probe, ""), exc.message
                continue
            host = str(resolved.host)
            # The host path is canonical: following it the way the kernel does lands on itself ...
            assert os.path.realpath(host) == host, (probe, host)
            # ... and it lies inside the root (or mount source) the sandbox path belongs to.
            boundary = _allowed_boundary(w, resolved)
            assert _inside(host, boundary), (probe, host, boundary)
            assert resolved.sandbox == normalize(probe)
            if resolved.mount is None:
                assert resolved.sandbox.split("/")[1] == resolved.root


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layout_strategy, probes=st.lists(sandbox_path, min_size=1, max_size=5))
@example(layout=[("@proj", "l1", "loop/../esc/planted")], probes=["/workspace/proj/l1"])
def test_property_writes_never_touch_anything_outside(layout, probes):
    with tempfile.TemporaryDirectory() as tmp:
        w = _build(Path(tmp), layout)
        before = _snapshot(w["outside"], w["ro"], w["agent"] / "config")
        ctx = ToolContext(
            agent_dir=w["agent"],
            slug="agent",
            paths=SandboxPaths(w["agent"], w["mounts"]),
            sandbox=SandboxConfig(mounts=w["mounts"]),
            tools_config=ToolsConfig(),
            session=Session(id="test"),
        )
        write = builtin("write")
        for probe in probes:
            result = asyncio.run(execute(write, {"path": probe, "content": "planted\n"}, ctx))
            if result["success"] is False:
                assert tmp not in result["error"].replace(probe, ""), result
        assert _snapshot(w["outside"], w["ro"], w["agent"] / "config") == before
        # nothing appeared directly in the temp folder either (next to the agent)
        assert sorted(os.listdir(tmp)) == ["agent", "outside", "proj-link", "proj-src", "ro-src"]
