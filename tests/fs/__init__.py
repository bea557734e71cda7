"""Tests of sgpatch.fs (a package, so their module names do not clash with tests/state)."""
