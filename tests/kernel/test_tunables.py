"""`%config Cireil`: the refresh interval and inline size limits as traitlets, set in a real kernel."""

from __future__ import annotations

from cireil.kernel import tunables
from cireil.kernel.views import live
from cireil.render import safe


def test_defaults_are_the_shipped_constants():
    settings = tunables.Cireil()
    assert settings.refresh_interval == live.INTERVAL_S == 0.25
    assert settings.plain_limit == safe.PLAIN_LIMIT
    for trait in tunables.TARGETS:
        assert getattr(settings, trait) == tunables.shipped(trait)


def test_config_sets_a_limit_the_next_view_obeys_and_unload_puts_it_back(kernel, agent_dir):
    for n in range(40):
        (agent_dir / "workspace" / f"file-{n:02}.txt").write_text("x")
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    listed = kernel.run("%config Cireil").stdout
    assert "Cireil.refresh_interval" in listed and "Cireil.plain_limit" in listed and "0.25" in listed
    before = kernel.run("%cireil_list_dir /workspace").result["text/plain"]
    assert "file-39.txt" in before and "more characters not shown" not in before

    kernel.run("%config Cireil.plain_limit = 200\n%config Cireil.refresh_interval = 0.5")
    after = kernel.run("%cireil_list_dir /workspace").result["text/plain"]
    assert after.startswith(before[:200]) and "more characters not shown" in after and "file-39.txt" not in after
    shown = kernel.run("from cireil.kernel.views import live\nlive.INTERVAL_S").result["text/plain"]
    assert shown == "0.5"
    assert kernel.run("%config Cireil.refresh_interval").result["text/plain"] == "0.5"

    bad = kernel.run("%config Cireil.plain_limit = 0", ok=False)  # below the trait's minimum: refused
    assert "plain_limit" in bad.text() and kernel.run("%config Cireil.plain_limit").result["text/plain"] == "200"

    kernel.run("%unload_ext cireil")
    assert kernel.run("live.INTERVAL_S").result["text/plain"] == "0.25"
