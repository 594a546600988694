"""`./dev` without a command: its usage text whole and true; the browser tests' fonts installed on their own."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conftest import REPO


def test_usage_is_the_whole_comment_block_and_says_what_root_installs():
    done = subprocess.run(["bash", str(REPO / "dev")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    text = done.stdout
    assert text.startswith("The two commands of the README")
    assert text.rstrip().endswith(".")  # no sentence cut mid-way
    header = [line for line in (REPO / "dev").read_text().splitlines()[1:] if line.startswith("#")]
    block = []
    for line in (REPO / "dev").read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        block.append(re.sub(r"^# ?", "", line))
    assert text.splitlines() == block and header
    assert "nothing is installed globally" not in text  # as root it apt-installs
    assert "apt-get" in text and "as root" in text.lower()


def test_fonts_are_installed_even_when_chromium_already_is(tmp_path: Path):
    """With chromium present but no emoji font, system_packages asks for the font (here: names it, not being root
    or having no apt-get in the stand-in PATH)."""
    script = (REPO / "dev").read_text()
    function = script[
        script.index("system_packages() {") : script.index("\n}\n", script.index("system_packages() {")) + 3
    ]
    # the stand-in system: chromium and bwrap exist, no font file does
    function = function.replace("/usr/share/fonts/", f"{tmp_path}/fonts/").replace("/usr/bin/chromium", "/bin/sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bwrap", "id"):
        (bin_dir / name).write_text("#!/bin/sh\necho 1000\n")
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run(
        ["bash", "-c", f"{function}\nsystem_packages"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "not installed: fonts-dejavu-core fonts-noto-color-emoji (" in done.stderr
    assert "chromium " not in done.stderr.split("(")[0]
