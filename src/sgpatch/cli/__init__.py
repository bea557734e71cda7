"""The command line: the typer app and one module of wiring per command."""
