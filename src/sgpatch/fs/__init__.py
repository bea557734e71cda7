"""The one file-system safety layer: the only code that creates, replaces, renames, locks and
journals files (tests/fs/test_discipline.py greps the rest of src/ to keep it so).

One concept per module, as git keeps `lockfile.h` and `tempfile.h` apart from the sequencer:
`regular` (a regular file opened without following links or blocking, read within bounds),
`dirs` (folders opened component by component with O_NOFOLLOW, relative to a descriptor),
`atomic` (a temp file made with O_EXCL, then a rename; fsync where durability needs it),
`lock` (one writer: a kernel flock on a regular file, its holder said), `journal` (the undo
journal of a run that writes), and `steps` (the test-only kill hook every write step counts in).
"""
