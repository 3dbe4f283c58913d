"""The ``infinite-context`` command line: argument parsing, one core call per sub-command, output."""
