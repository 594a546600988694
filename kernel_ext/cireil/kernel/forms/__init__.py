"""Widget-backed tool calls: a form generated from each tool's parameter schema."""
