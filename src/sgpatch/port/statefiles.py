"""Every file of a port workspace's state, named once, as git's sequencer.c names each of a
rebase's files at its top (`rebase_path_todo`, `rebase_path_done`, ...): what it holds, and what
it means after a crash. Every other module names a state file through this one.

The state is small named text files in `W/.sgpatch-port/` that a person can `cat`. A step's
writes are journaled (`undo.py`): killed inside a step, the next run of any port command on W
puts the step back first, so every file below is as the last whole step left it unless its
comment says otherwise. The names here are relative to the state folder (`STATE`), but for
those at W's top. The names sgpatch writes there are `OURS_IN_STATE`, derived from these
declarations: anything else in the folder (`na-<id>` included) is a person's, and --abort or a
new port keeps it aside (workspace.own_files).
"""

from __future__ import annotations

_OURS: set[str] = set()


def _ours(name: str) -> str:
    """Declare a state file (or folder) sgpatch writes; its first component joins the
    whitelist."""
    _OURS.add(name.split("/", 1)[0])
    return name


# ---------------------------------------------------------------------------------------------
# W's top

STATE = ".sgpatch-port"  # the state folder; made whole by a rename: W is a workspace or not
PKG = "sglang"  # the release's tree the person edits (its files listed in TREE)
# the workspace's lock (one writer at a time; the kernel drops it with the process, the empty
# file stays and is harmless)
LOCK = ".sgpatch-port.lock"
# the state folder being made, renamed to STATE whole: after a crash, a port that never began
# (the next port clears it; its COMMAND says what to run again)
NEW_STATE = ".sgpatch-port.new-"
# the state folder being removed, renamed from STATE whole: after a crash, an --abort or a
# take-over that was under way (the next port clears it)
OLD_STATE = ".sgpatch-port.old-"

# ---------------------------------------------------------------------------------------------
# who the port is: written whole by workspace.claim (all of them, or no state folder at all)

MARKER = _ours("marker")  # `sgpatch port workspace`: W is sgpatch's (only such a W is cleared)
FORMAT = _ours("format")  # CURRENT_FORMAT: --continue refuses the state of another format
CURRENT_FORMAT = "3"  # 3: steps journaled, a phase, the set bound by its real path
SET = _ours("set")  # the manifest ported, by its real path: --continue writes that set only
SET_DIR = _ours("set-dir")  # the real path of its folder
SET_NAME = _ours("set-name")  # the set's name
SET_SHA256 = _ours("set-sha256")  # the manifest's digest at the start: edits since refused
ONTO = _ours("onto")  # the target release (or snapshot)
OFFLINE = _ours("offline")  # yes | no: whether releases come from the cache only
KNOWN = _ours("known")  # the releases port knew at the start: --continue decides on the same
WITHOUT = _ours("without")  # the patches left out with --without
MADE = _ours("made")  # yes | no: whether sgpatch made W (--abort removes only a W it made)
COMMAND = _ours("command")  # the port command that began it: the hints' "port again"
# the line saying where this port copied the person's files of the port finished before
KEPT_ASIDE = _ours("kept-aside")

# ---------------------------------------------------------------------------------------------
# laying out the release

# start | carry | stopped | planned | finishing | finished: what the next --continue does
# first (after a crash, the phase of the last whole step: that is redone)
PHASE = _ours("phase")
# the release's top folders, written here from the verified wheel and renamed into W whole;
# after a crash, folders not yet renamed, laid out again (only the absent ones copied)
STAGE = _ours("stage")
# while W is laid out from the tree of the port finished before: that tree (`sha256  path`);
# removed once the stage is no longer it (after a crash without it, the stage is laid afresh)
REUSED = _ours("reused")
# `sha256  path` of every file sgpatch wrote into W: what --abort removes, and what tells a
# person's edit (a file listed that is not in W yet is simply not there to remove)
TREE = _ours("tree")

# ---------------------------------------------------------------------------------------------
# the journal of the step under way (undo.py): present only while a step writes; after a
# crash, the next run replays it backwards (the step undone, later hand edits kept)

JOURNAL = _ours("journal")
JOURNAL_STEP = f"{JOURNAL}/step"  # the step's name
JOURNAL_INDEX = f"{JOURNAL}/index"  # fs.journal's lines: each file's original, by digest
JOURNAL_ORIGINALS = f"{JOURNAL}/originals"  # the originals' bytes, fsynced before a write

# ---------------------------------------------------------------------------------------------
# the queue (sequencer.Queue), written at each patch's step end

TODO = _ours("todo")  # patches still to carry (or with files still waiting), in order
PARTIAL = _ours("partial")  # the state lines of the patches on TODO with some files carried
DONE = _ours("done")  # the state lines of the patches carried (or settled: upstream, n/a, ...)
NEEDS_A_HAND = _ours("needs-a-hand")  # the state lines of the stopped patches
PROBLEMS = _ours("problems")  # problems/ID: a stopped patch's `file<TAB>hunks<TAB>why` lines
FIX = _ours("fix")  # what to fix, for the person (stopreport): made from the lists above

# ---------------------------------------------------------------------------------------------
# per patch: its files (snapshots.Listing) and what it made of them

FILES = _ours("files")  # files/ID: the package files the patch touches (and edits joined)
CARRIED = _ours("carried")  # carried/ID: those carried (or fixed) so far
FIXING = _ours("fixing")  # fixing/ID: a stopped patch's files that need a hand
# before/ID/FILE, after/ID/FILE: each carried file as W held it before and after the patch
# (its new patch file is their diff); ID.absent lists the files absent on that side, ID.modes
# the git modes that are not 100644
BEFORE = _ours("before")
AFTER = _ours("after")
PATCHES = _ours("patches")  # patches/ID.patch: the new patch file of a finished patch
MERGE = _ours("merge")  # merge/ID/FILE.base, .theirs: a merged file's inputs, for the person
HUNKS = _ours("hunks")  # hunks/ID/FILE.jsonl: a stopped file's per-hunk details (JSON rows)
DROPPED = _ours("dropped")  # dropped/ID: hunks dropped as already there upstream
MOVED = _ours("moved")  # moved/ID: hunks carried into the file their code moved to
# probes/ID.yaml: a stopped or carried patch's probe, the person's to edit during a stop
# (listed in TREE: --abort keeps an edit of it); ID.sha256: what sgpatch wrote there (another
# digest: the person edited it); ID.decided: where the checked probe goes and who made it
PROBES = _ours("probes")

# ---------------------------------------------------------------------------------------------
# the end

# while --continue writes the set (phase finishing): the set's new files (files/REL and their
# list files.list), the new manifest (patchset.yaml) and its digest (sha256), the changes and
# warnings to report; after a crash --continue writes what is staged here again
FINISHING = _ours("finishing")
FINISHING_FILES = f"{FINISHING}/files"
FINISHING_LIST = f"{FINISHING}/files.list"
FINISHING_SET = f"{FINISHING}/patchset.yaml"
FINISHING_SHA256 = f"{FINISHING}/sha256"
FINISHING_CHANGES = f"{FINISHING}/changes"
FINISHING_WARNINGS = f"{FINISHING}/warnings"
FINISHED = _ours("finished")  # present once the set was written: W no longer a live port

# written by the person, never by sgpatch: na-ID, why a patch n/a on the nearest release is n/a
# on the target too (--continue writes an `==V` n/a variant with that reason)
NA_PREFIX = "na-"

OURS_IN_STATE = frozenset(_OURS)


def problem_list(pid: str) -> str:
    return f"{PROBLEMS}/{pid}"


def listed(kind: str, pid: str) -> str:
    """`files/ID`, `carried/ID` or `fixing/ID` (kind: a snapshots.Listing field)."""
    assert kind in (FILES, CARRIED, FIXING)
    return f"{kind}/{pid}"


def snapshot_of(side: str, pid: str, rel: str) -> str:
    """`before/ID/FILE` or `after/ID/FILE`."""
    assert side in (BEFORE, AFTER)
    return f"{side}/{pid}/{rel}"


def absent_list(side: str, pid: str) -> str:
    return f"{side}/{pid}.absent"


def modes_list(side: str, pid: str) -> str:
    return f"{side}/{pid}.modes"


def patch_of(pid: str) -> str:
    return f"{PATCHES}/{pid}.patch"


def merge_input(pid: str, rel: str, which: str) -> str:
    """`merge/ID/FILE.base` or `.theirs`."""
    assert which in ("base", "theirs")
    return f"{MERGE}/{pid}/{rel}.{which}"


def hunks_of(pid: str, rel: str) -> str:
    return f"{HUNKS}/{pid}/{rel}.jsonl"


def dropped_of(pid: str) -> str:
    return f"{DROPPED}/{pid}"


def moved_of(pid: str) -> str:
    return f"{MOVED}/{pid}"


def probe_of(pid: str, what: str = "yaml") -> str:
    """`probes/ID.yaml` (the probe), `.sha256` or `.decided`."""
    assert what in ("yaml", "sha256", "decided")
    return f"{PROBES}/{pid}.{what}"


def finishing_file(rel: str) -> str:
    return f"{FINISHING_FILES}/{rel}"


def na_of(pid: str) -> str:
    return f"{NA_PREFIX}{pid}"
