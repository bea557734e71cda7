"""The SGLang tree sgpatch works on: where it is, its version, and guarded reads of its files."""
