"""The magics: `%cireil SUBCOMMAND`, `%%cireil_agent`, and one `%cireil_<tool>` per enabled tool."""
