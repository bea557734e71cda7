"""Carry a patch set to another SGLang release, like `git rebase` (docs/porting.md).

driver (`port`, `walk` for --step), resume (--continue, --abort), report (a step's report,
its JSON, --show) are the entry points; docs/architecture.md maps the other modules.
"""
