"""Patch sets: the manifest model, its text edits, and probes (does upstream have a change?)."""
