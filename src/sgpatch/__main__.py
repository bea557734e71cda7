"""`python -m sgpatch` runs the CLI."""

from sgpatch.cli import main

if __name__ == "__main__":
    main()
