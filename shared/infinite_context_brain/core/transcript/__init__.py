"""Claude Code transcripts (JSONL), read-only: reader, context meter, observations, endless mode."""
