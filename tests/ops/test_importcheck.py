"""The import check's view of a tree on disk (sgpatch.ops.importcheck)."""

import os

from sgpatch.ops.importcheck import tree_release


def test_a_tree_file_swapped_for_a_fifo_or_a_link_reads_as_absent(tmp_path):
    """Input: a package tree listed, then one listed file replaced by a FIFO and another by a
    symlink to a file outside the tree. Outcome: both read as absent at once (the FIFO is not
    waited on, the link not followed); an untouched file reads as written."""
    root = tmp_path / "sglang"
    root.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (root / name).write_text(f"X = '{name}'\n")
    outside = tmp_path / "secret.py"
    outside.write_text("SECRET = 1\n")
    release = tree_release(root)
    (root / "a.py").unlink()
    os.mkfifo(root / "a.py")
    (root / "b.py").unlink()
    (root / "b.py").symlink_to(outside)
    assert release.read("a.py") is None
    assert release.read("b.py") is None
    assert release.read("c.py") == b"X = 'c.py'\n"
