"""Every state file of a port workspace declared once (sgpatch.port.statefiles): what a real
stop writes is declared, and the whitelist --abort keeps a person's files by is that
declaration."""

from __future__ import annotations

import os

from helpers import start_conflict
from sgpatch.port import statefiles
from sgpatch.port.statefiles import OURS_IN_STATE, STATE


def test_what_a_stop_writes_is_declared(cache, tmp_path):
    """Input: the demo set ported to 1.2 (`first` stops on srt/mod.py). Outcome: every name in
    the state folder is one statefiles declares, and the stopped patch's files are where its
    declarations say (problems, probe, before and after, the listing)."""
    _d, w, code, _doc = start_conflict(tmp_path)
    assert code == 3
    state = w / STATE
    assert set(os.listdir(state)) <= OURS_IN_STATE
    for rel in (statefiles.problem_list("first"), statefiles.probe_of("first"),
                statefiles.probe_of("first", "sha256"), statefiles.listed("fixing", "first"),
                statefiles.snapshot_of("before", "first", "srt/mod.py"),
                statefiles.absent_list("after", "first")):  # fmt: skip
        assert (state / rel).is_file(), rel


def test_the_whitelist_is_the_declaration():
    """Input: the module's declared names. Outcome: the whitelist holds the first part of
    each name sgpatch writes (the per-patch templates' folders included) and nothing a person
    writes (`na-ID`), and no name at W's top."""
    declared = [v for k, v in vars(statefiles).items() if k.isupper() and isinstance(v, str)]
    at_top = {statefiles.STATE, statefiles.PKG, statefiles.LOCK, statefiles.NEW_STATE,
              statefiles.OLD_STATE, statefiles.NA_PREFIX, statefiles.CURRENT_FORMAT}  # fmt: skip
    assert {v.split("/", 1)[0] for v in declared if v not in at_top} == OURS_IN_STATE
    assert statefiles.dropped_of("p").split("/")[0] in OURS_IN_STATE
    assert statefiles.na_of("p") not in OURS_IN_STATE and STATE not in OURS_IN_STATE
