"""Whole operations over plans: plan, lint, matrix, verify, refresh, import, split."""
