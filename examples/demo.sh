#!/usr/bin/env bash
# `make demo`: apply the kimi-eagle3-sm120 patch set to a real SGLang release, end to end.
#
#   SGLANG_VERSION=0.5.9     release to patch (default 0.5.9; any release the set supports)
#   UPSTREAM_VERSION=V       release to compare with (default: the first release after
#                            SGLANG_VERSION that the set supports; none after the newest)
#   DEMO_DIR=DIR             where to build the trees (default: ./demo-tree, one named place:
#                            each run replaces the trees it makes there, nothing goes to /tmp;
#                            `make clean` or `rm -rf demo-tree` removes it)
#
# Section titles come from what `sgpatch status` reports on the release, not from a script
# written for one release.
#
# Needs `sgpatch` on PATH (make demo puts .venv/bin first) and `python` with sgpatch importable.
# The release wheel comes from the package index through pip on first use and is cached in
# $SGPATCH_CACHE (default ~/.cache/sgpatch). Every step checks its exit code.
set -euo pipefail

VERSION="${SGLANG_VERSION:-0.5.9}"
SET=kimi-eagle3-sm120
DIR="$(mkdir -p "${DEMO_DIR:-demo-tree}" && cd "${DEMO_DIR:-demo-tree}" && pwd)"
PY="$(command -v python || command -v python3)"

# bold headings on a terminal only: a log or pipe gets plain text, like sgpatch's own output
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD='' PLAIN=''; fi
section() { printf '\n%s==== %s%s\n' "$BOLD" "$*" "$PLAIN"; }
# run EXPECTED_EXIT CMD...: show the command, run it, check its exit code.
run() {
    local want=$1; shift
    printf '$ %s\n' "$*"
    local rc=0
    "$@" || rc=$?
    printf '[exit %s]\n' "$rc"
    if [ "$rc" != "$want" ]; then
        echo "demo: expected exit $want from: $*" >&2
        exit 1
    fi
}
# tree VERSION DEST: a writable site-packages-shaped copy of the release (prints the package root).
tree() {
    "$PY" - "$1" "$2" <<'EOF'
import sys
from pathlib import Path
from sgpatch.releases.cache import copy_tree
print(copy_tree(sys.argv[1], Path(sys.argv[2]), "site-packages"))
EOF
}

# states TREE: "COUNTS|CHECK_EXIT|UPSTREAM_IDS", from what `sgpatch status` reports on TREE.
states() {
    local rc=0 doc
    doc="$(sgpatch status --json --check --set "$SET" --sglang-dir "$1")" || rc=$?
    printf '%s' "$doc" | "$PY" -c '
import json, sys
ps = [p for p in json.load(sys.stdin)["sets"][0]["patches"] if p["selected"]]
counts = {}
for p in ps:
    counts[p["state"]] = counts.get(p["state"], 0) + 1
text = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
print(text, sys.argv[1], " ".join(p["id"] for p in ps if p["state"] == "upstream"), sep="|")
' "$rc"
}
# next_release: the first release after $VERSION that the set supports (empty after the newest).
next_release() {
    "$PY" -c '
import sys
from sgpatch.patchset.manifest import load_set
from sgpatch.ops.matrix import select_versions
later = select_versions(load_set(sys.argv[2]), ">" + sys.argv[1])
print(later[0] if later else "")' "$VERSION" "$SET"
}

section "sgpatch and its patch sets"
run 0 sgpatch --version
run 0 sgpatch list
run 0 sgpatch show "$SET"

section "a pristine SGLang $VERSION tree (from the release wheel)"
rm -rf "$DIR/$VERSION"
T="$(tree "$VERSION" "$DIR/$VERSION")"
echo "package root: $T"

IFS='|' read -r BEFORE BEFORE_RC BEFORE_UP <<<"$(states "$T")"
if [ "$BEFORE_RC" = 0 ]; then VERDICT="nothing to do"; else VERDICT="not done"; fi
section "status before: $BEFORE; $VERDICT (status --check exits $BEFORE_RC)"
run 0 sgpatch status --sglang-dir "$T"
run "$BEFORE_RC" sgpatch status --sglang-dir "$T" --check

section "probes: does upstream already contain each patch? (-v shows the evidence)"
run 0 sgpatch probe -v --set "$SET" --sglang-dir "$T"

section "dry run: the whole set planned in memory, nothing written"
run 0 sgpatch apply --dry-run --set "$SET" --sglang-dir "$T"

section "apply (--strict: no fuzz, as in a Docker build)"
run 0 sgpatch apply --strict --set "$SET" --sglang-dir "$T"

IFS='|' read -r AFTER AFTER_RC _ <<<"$(states "$T")"
section "status after: $AFTER; done (status --check exits $AFTER_RC)"
run 0 sgpatch status --check --sglang-dir "$T"

rm -rf "$DIR/pristine"
PRISTINE="$(tree "$VERSION" "$DIR/pristine")"
CHANGED="$( (cd "$PRISTINE" && diff -rq -x .sgpatch . "$T" | awk '{print substr($2, 3)}') || true)"
FIRST="$(head -n 1 <<<"$CHANGED")"
section "what changed: $(grep -c . <<<"$CHANGED" || true) file(s)${FIRST:+; the diff of $FIRST against the pristine release}"
printf '%s\n' "$CHANGED" | sed 's/^/  /'
if [ -n "$FIRST" ]; then
    run 0 sgpatch diff --sglang-dir "$T" "$FIRST"
fi

section "apply again: a no-op"
run 0 sgpatch apply --set "$SET" --sglang-dir "$T"

NEXT="${UPSTREAM_VERSION:-$(next_release)}"
if [ -n "$NEXT" ]; then
    rm -rf "$DIR/$NEXT"
    U="$(tree "$NEXT" "$DIR/$NEXT")"
    IFS='|' read -r THEN _ THEN_UP <<<"$(states "$U")"
    NEWLY="$(comm -13 <(tr ' ' '\n' <<<"$BEFORE_UP" | sort) <(tr ' ' '\n' <<<"$THEN_UP" | sort) | xargs)"
    if [ -n "$NEWLY" ]; then
        section "SGLang $NEXT: upstream now contains $NEWLY; the probes see it ($THEN)"
    else
        section "SGLang $NEXT, the next release: no patch moved upstream since $VERSION ($THEN)"
    fi
    run 0 sgpatch probe --set "$SET" --sglang-dir "$U"
    run 0 sgpatch apply --strict --set "$SET" --sglang-dir "$U"
    IFS='|' read -r _ _ NOW_UP <<<"$(states "$U")"
    for id in $NEWLY; do
        if grep -qx "$id" <(tr ' ' '\n' <<<"$NOW_UP"); then state=upstream; else state=other; fi
        echo "$id on $NEXT: $state"
        [ "$state" = upstream ] || { echo "demo: expected $id upstream on $NEXT" >&2; exit 1; }
    done
else
    section "SGLang $VERSION is the newest release the set supports: no later one to compare"
fi

section "done"
# the revert names the sgpatch this demo ran (make demo's .venv), so it works as typed from any
# shell, whether or not an sgpatch is on that shell's PATH
printf 'trees kept in %s, replaced by the next run (revert with: %q revert --set %q --sglang-dir %q; remove with: rm -rf %q)\n' \
    "$DIR" "$(command -v sgpatch)" "$SET" "$T" "$DIR"
