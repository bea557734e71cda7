#!/usr/bin/env bash
# `make demo`: apply the kimi-eagle3-sm120 patch set to a real SGLang release, end to end.
#
#   SGLANG_VERSION=0.5.9     release to patch (default 0.5.9; any release the set supports)
#   DEMO_DIR=./demo-tree     where to build the trees (default: a fresh temp dir, kept)
#
# Needs `sgpatch` on PATH (make demo puts .venv/bin first) and `python` with sgpatch importable.
# The release wheel comes from the package index through pip on first use and is cached in
# $SGPATCH_CACHE (default ~/.cache/sgpatch). Every step checks its exit code.
set -euo pipefail

VERSION="${SGLANG_VERSION:-0.5.9}"
UPSTREAM_VERSION="${UPSTREAM_VERSION:-0.5.10}"   # the release where upstream merged the Kimi hooks
SET=kimi-eagle3-sm120
DIR="${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sgpatch-demo.XXXXXX")}"
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
from sgpatch.releases import copy_tree
print(copy_tree(sys.argv[1], Path(sys.argv[2]), "site-packages"))
EOF
}

section "sgpatch and its patch sets"
run 0 sgpatch --version
run 0 sgpatch list
run 0 sgpatch show "$SET"

section "a pristine SGLang $VERSION tree (from the release wheel)"
rm -rf "$DIR/$VERSION"
T="$(tree "$VERSION" "$DIR/$VERSION")"
echo "package root: $T"

section "status before: everything pending (status --check exits 1)"
run 0 sgpatch status --sglang-dir "$T"
run 1 sgpatch status --sglang-dir "$T" --check

section "probes: does upstream already contain each patch? (-v shows the evidence)"
run 0 sgpatch probe -v --set "$SET" --sglang-dir "$T"

section "dry run: the whole set planned in memory, nothing written"
run 0 sgpatch apply --dry-run --set "$SET" --sglang-dir "$T"

section "apply (--strict: no fuzz, as in a Docker build)"
run 0 sgpatch apply --strict --set "$SET" --sglang-dir "$T"

section "status after: done (status --check exits 0)"
run 0 sgpatch status --check --sglang-dir "$T"

section "what changed in srt/models/kimi_k25.py"
PRISTINE="$("$PY" -c "import sys; from sgpatch.releases import pristine_tree; print(pristine_tree(sys.argv[1]))" "$VERSION")"
if [ -f "$T/srt/models/kimi_k25.py" ]; then
    diff -u "$PRISTINE/srt/models/kimi_k25.py" "$T/srt/models/kimi_k25.py" \
        --label a/srt/models/kimi_k25.py --label b/srt/models/kimi_k25.py || true
fi
echo "files changed in the tree:"
(cd "$PRISTINE" && diff -rq -x .sgpatch . "$T" | awk '{print "  " substr($2, 3)}') || true

section "apply again: a no-op"
run 0 sgpatch apply --set "$SET" --sglang-dir "$T"

section "SGLang $UPSTREAM_VERSION: upstream merged the Kimi hooks, the probe sees it"
rm -rf "$DIR/$UPSTREAM_VERSION"
U="$(tree "$UPSTREAM_VERSION" "$DIR/$UPSTREAM_VERSION")"
run 0 sgpatch probe --set "$SET" --sglang-dir "$U"
run 0 sgpatch apply --strict --set "$SET" --sglang-dir "$U"
state="$(sgpatch status --json --set "$SET" --sglang-dir "$U" | "$PY" -c '
import json, sys
doc = json.load(sys.stdin)
print(next(p["state"] for p in doc["sets"][0]["patches"] if p["id"] == "kimi-k25-eagle3-hooks"))')"
echo "kimi-k25-eagle3-hooks on $UPSTREAM_VERSION: $state"
[ "$state" = upstream ] || { echo "demo: expected 'upstream', got '$state'" >&2; exit 1; }

section "done"
echo "trees kept in $DIR (revert with: sgpatch revert --set $SET --sglang-dir $T)"
