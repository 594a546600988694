"""`%cireil reconstruct` in a real kernel: the loaded agent's turns the original ran before attaching are rebuilt
from sessions.db (written as the original writes it), listed as reconstructed, and a second run adds none."""

from __future__ import annotations

import upstream_db as up
from kernelharness import Kernel
from turnkit import turn_agent


def test_the_magic_rebuilds_the_originals_turns_once_and_says_what_it_left_out(tmp_path, llm):
    directory = turn_agent(tmp_path, llm.base_url)
    up.create_original_db(directory / "sessions.db")
    up.fill(directory / "sessions.db", directory)
    before = up.snapshot(directory / "sessions.db")
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {directory}")
        first = kernel.run("%cireil reconstruct").stdout.splitlines()
        assert first[0].startswith("4 turn(s) rebuilt from sessions.db and recorded as reconstructed (turns ")
        assert sum(line.startswith("  not rebuilt: ") for line in first) == 3
        again = kernel.run("%cireil reconstruct").stdout.splitlines()
        assert again[0] == "0 turn(s) rebuilt from sessions.db and recorded as reconstructed"
        assert any("skipped" in line for line in again[1:])
        listed = kernel.run("%cireil recordings --production").stdout
        assert listed.count("reconstructed (") == 4
        one = kernel.run(f"%cireil reconstruct --session {up.GUILD} --since 2999-01-01").stdout
        assert one.startswith("0 turn(s) rebuilt")
        bad = kernel.run("%cireil reconstruct --since yesterday-ish", ok=False)
        assert "nothing reconstructed: " in bad.text() and "--since" not in bad.stdout
    finally:
        kernel.shutdown()
    assert up.snapshot(directory / "sessions.db") == before  # only read
