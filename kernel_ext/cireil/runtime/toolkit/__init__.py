"""What every tool shares: the Tool contract, its result, the registry of built-in tools, saved calls."""
