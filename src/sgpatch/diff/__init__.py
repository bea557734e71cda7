"""Unified diffs: read byte-exactly (on top of unidiff) and written in one canonical form."""
