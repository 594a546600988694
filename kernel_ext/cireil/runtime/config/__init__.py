"""Loading and validating an agent's configuration files; every error names file, line and key."""
