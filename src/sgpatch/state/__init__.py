"""What sgpatch keeps in a tree's `.sgpatch/` folder: ledger, journal, lock and the writer."""
