"""The edit matcher: tiers of forgiving search, near windows, re-indentation, batches, diffs and patches."""

from .batch import Outcome, apply_edits
from .diffs import Change, numbered, unified

__all__ = ["Change", "Outcome", "apply_edits", "numbered", "unified"]
