"""Python checks for the demo's scenarios: `check = "wren_checks.NAME"` in a scenario's [answer]."""

from pathlib import Path


def names_a_volunteer(run):
    """The answer names at least one person listed in the run's own memories/volunteers.md."""
    listed = (Path(run.agent_dir) / "memories" / "volunteers.md").read_text(encoding="utf-8")
    names = [line[2:].split()[0] for line in listed.splitlines() if line.startswith("- ")]
    if not any(name in run.answer for name in names):
        return f"the answer names none of {', '.join(names)}"
    return None
