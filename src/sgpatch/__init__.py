"""sgpatch: versioned, probe-aware, fuzz-safe source patch sets for vendored SGLang trees."""

__version__ = "0.1.0"
