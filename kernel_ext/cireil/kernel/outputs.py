"""Writing into an ipywidgets Output from any thread: assign `outputs`, never `with out:`."""

from __future__ import annotations

from typing import Any

from ..render.safe import safe_bundle


def display_output(bundle: dict[str, Any]) -> dict[str, Any]:
    """One entry of an Output widget's `outputs`: a display_data message carrying `bundle` (made safe)."""
    return {"output_type": "display_data", "data": safe_bundle(bundle), "metadata": {}}
