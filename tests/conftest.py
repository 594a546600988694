"""Shared fixtures: a small throwaway agent directory and a real kernel; the repository's root and test data."""

from __future__ import annotations

import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from kernelharness import Kernel

REPO = Path(__file__).resolve().parents[1]  # the repository root, whichever folder of tests/ asks
DATA = REPO / "tests" / "data"

# support modules whose asserts check what tests do: pytest explains their failures as it does a test's own
pytest.register_assert_rewrite("magicshell", "mcpkit", "widgetkit")


def pytest_configure(config: pytest.Config) -> None:
    # A suite started as a background job of a non-interactive shell (`./dev test &` in a script, some CI
    # runners) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the tests that
    # interrupt something saw nothing happen (an interrupt_main() that never landed hung until pytest's 300 s
    # timeout; a `cireil eval` child, inheriting the ignore, ran to the end and exited 0, not 130). Those tests
    # are about what cireil does on Ctrl-C, so the suite listens for it as an interactive run does; a child
    # started from here then begins with SIGINT's default again (exec resets a handled signal).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


MINIMAL_TOOLS = """\
# tools for the test agent
list-dir = true
write = true
session-info = true
read = false
exec = false
"""


def make_agent(root: Path, tools_toml: str = MINIMAL_TOOLS, *, name: str = "testagent") -> Path:
    """A valid agent directory with the five blocks, one skill and a little workspace."""
    agent = root / name
    for sub in ("config", "workspace/docs", "memories", "tasks", "blocks", "skills/notes"):
        (agent / sub).mkdir(parents=True, exist_ok=True)
    (agent / "config" / "tools.toml").write_text(tools_toml)
    # agent turns need a provider; tool tests never reach it (tests/turnkit.py points one at a live server)
    (agent / "config" / "engine.toml").write_text(
        '[none]\napiBase = "http://127.0.0.1:9/v1"\ndefaultModel = "unused"\nisGlobalDefault = true\n'
    )
    (agent / "core.md").write_text("You are a test agent.\n")
    for block in ("soul", "identity", "person", "long-term", "style-notes"):
        (agent / "blocks" / f"{block}.md").write_text(f'+++\ndescription = "The {block} block"\n+++\n{block} body\n')
    (agent / "skills" / "notes" / "SKILL.md").write_text(
        textwrap.dedent("""\
        ---
        name: notes
        description: Keep notes tidy.
        ---
        Write notes as short lists.
        """)
    )
    (agent / "workspace" / "hello.txt").write_text("hello\n")
    (agent / "workspace" / "docs" / "guide.md").write_text("# Guide\n\nSome text.\n")
    return agent


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    return make_agent(tmp_path)


@pytest.fixture
def kernel(tmp_path: Path):
    k = Kernel(cwd=tmp_path)
    try:
        yield k
    finally:
        k.shutdown()


@pytest.fixture
def shell():
    """A fresh in-process IPython shell per test, installed as the singleton so display() and capture_output()
    reach it; the extension is unloaded and the runtime loop stopped after the test."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from cireil.runtime.base.loop import RUNTIME

    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    sh = InteractiveShell.instance(config=config)
    try:
        yield sh
    finally:
        if "cireil" in sh.extension_manager.loaded:
            sh.extension_manager.unload_extension("cireil")
        RUNTIME.stop()
        InteractiveShell.clear_instance()


@pytest.fixture
def store(tmp_path: Path):
    """The SessionStore of a new agent folder (tmp_path), closed after the test."""
    from cireil.runtime.sessions import SessionStore

    s = SessionStore.for_agent(tmp_path)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def llm():
    """The scripted model server on loopback (cireil.testing.scripted_llm), one per test."""
    from cireil.testing.scripted_llm import ScriptedLLM

    with ScriptedLLM() as server:
        yield server


@pytest.fixture(scope="session")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1 (cert, key): a TLS server no client trusts."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
