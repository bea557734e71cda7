"""Hunk placement: where a hunk goes in a file's lines, never in the wrong place (pure, no I/O)."""
