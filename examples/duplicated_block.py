"""Write scenario 1 of docs/index.md (a block repeated in a file, its context drifted):
`t.txt` and `dup.diff`, as docs/engine.md "An example: the duplicated block" describes them.

    python3 examples/duplicated_block.py /tmp/dup     # then: cd /tmp/dup

The exact lines matter: without the `tail` lines, say, the second block ends the file, the
hunk keeps 2 lines of context below instead of 3, and the best match sgpatch names at fuzz 0
is the first block's (line 11), not the second's (66). So the files are written here, not
left to a description.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

BLOCK = ["def f():", "    x = 1", "    y = 2", "    return x + y", ""]


def files() -> dict[str, str]:
    """t.txt (upstream's file now) and dup.diff (`diff -u`, 3 lines of context, made on the
    file as it was): the diff changes `y = 2` to `y = 3` in the second block; upstream has since
    renamed the line just above that block and inserted 40 lines after the renamed one."""
    head = ["# header", *(f"pad{i}" for i in range(10)), *BLOCK]
    mid = [f"mid{i}" for i in range(10)]
    tail = [*BLOCK, *(f"tail{i}" for i in range(10))]
    old = [*head, *mid, *tail]
    new = list(old)
    new[len(head) + len(mid) + BLOCK.index("    y = 2")] = "    y = 3"
    now = [*head, *mid[:9], "mid9 renamed upstream", *(f"new{i}" for i in range(40)), *tail]
    diff = difflib.unified_diff(
        [f"{ln}\n" for ln in old], [f"{ln}\n" for ln in new], "t.txt", "t.txt", n=3
    )
    return {"t.txt": "".join(f"{ln}\n" for ln in now), "dup.diff": "".join(diff)}


def main(argv: list[str]) -> int:
    where = Path(argv[1] if len(argv) > 1 else ".")
    where.mkdir(parents=True, exist_ok=True)
    for name, text in files().items():
        (where / name).write_text(text)
        print(where / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
