"""Git mode: commits for applied patches and patches from commits, when the tree is a checkout."""
