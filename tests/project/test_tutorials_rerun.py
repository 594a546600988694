"""Tutorials as a person uses them: Run All, then clicking the buttons and running cells again.

Each notebook's code cells run in one real kernel, top to bottom, in the notebook's folder (as JupyterLab runs
them); then the hands-on parts are used the way a person would after Run All.
"""

from __future__ import annotations

import nbformat
import pytest

from conftest import REPO
from kernelharness import Kernel

NOTEBOOKS = REPO / "notebooks"


@pytest.fixture
def run_all():
    kernels: list[Kernel] = []

    def run(name: str) -> tuple[Kernel, list[str]]:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        kernel = Kernel(cwd=NOTEBOOKS)
        kernels.append(kernel)
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        for cell in nb.cells:
            if cell.cell_type == "code":
                kernel.run(cell.source, timeout=120, ok="raises-exception" not in cell.metadata.get("tags", []))
        return kernel, sources

    yield run
    for kernel in kernels:
        kernel.shutdown()


def _cell_number(sources: list[str], part: str) -> int:
    """The execution count (In[n]) of the first code cell containing `part`: cells ran once each, in order."""
    return next(i for i, s in enumerate(sources) if part in s) + 1


def test_editing_tutorial_apply_button_still_works_after_run_all(run_all):
    kernel, sources = run_all("03-editing.ipynb")
    n = _cell_number(sources, "--dry-run")
    # the Apply button runs exactly this action; after Run All the file it previewed must be unchanged
    run = kernel.run(
        "from cireil.render import result_actions\n"
        f"apply = next(a for a in result_actions(Out[{n}]) if a.label == 'Apply')\n"
        "done = cireil.current_agent().call(apply.tool, apply.args)\n"
        "print(done.success, done.data.get('error', ''))"
    )
    assert run.stdout.startswith("True"), run.stdout
    # and running the Python sections again works on their copy
    for source in sources[_cell_number(sources, "shutil.copy") - 1 :][:3]:
        kernel.run(source)


def test_agent_turns_tutorial_keeps_its_model_after_run_all(run_all):
    kernel, _ = run_all("06-agent-turns.ipynb")
    run = kernel.run("%%cireil_agent\nWhat files are in my workspace?", timeout=60)
    assert "garden-handbook.md" in run.text()
    assert "Wren: Your workspace has" in run.text()  # the bubbles use the name the tutorial gives the agent
    # an answer built from a bulleted file keeps each bullet whole, not cut at the file's line break
    run = kernel.run("%%cireil_agent\nWho are our volunteers?", timeout=60)
    assert "keeps the tool shed key. He asks for task lists the evening before." in run.text()


def test_a_turn_without_a_model_says_where_engine_toml_is_and_what_to_do(tmp_path):
    kernel = Kernel(cwd=tmp_path, env={"OPENAI_API_KEY": ""})
    try:
        kernel.run("%load_ext cireil\n%cireil load --demo")
        directory = kernel.run("print(cireil_dir := __import__('cireil').current_agent().directory)").stdout.strip()
        run = kernel.run("%%cireil_agent\nhello", ok=False)
        message = run.stderr  # IPython shows a UsageError as one message, without a traceback
        assert message.startswith("UsageError: ")
        assert "OPENAI_API_KEY" in message  # what the runtime said stays first
        assert f"{directory}/config/engine.toml" in message
        assert "throwaway copy" in message
        assert "os.environ['OPENAI_API_KEY']" in message
        assert "ScriptedLLM(default=wren).start()" in message and "06-agent-turns" in message
    finally:
        kernel.shutdown()


def test_the_mcp_tutorials_leaf_is_a_real_picture():
    import importlib.util
    import struct
    import sys

    sys.path.insert(0, str(NOTEBOOKS))
    try:
        spec = importlib.util.spec_from_file_location("make_05", NOTEBOOKS / "make_05_mcp_and_plugins.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(NOTEBOOKS))
    server = module.SERVER
    namespace: dict = {}
    exec(server[server.index("def leaf_png") : server.index("@mcp.tool()", server.index("def leaf_png"))], namespace)
    png = namespace["leaf_png"]()
    width, height = struct.unpack(">II", png[16:24])
    assert png.startswith(b"\x89PNG") and width >= 32 and height >= 32
