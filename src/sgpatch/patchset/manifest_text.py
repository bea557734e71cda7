"""Edit patchset.yaml as text, keeping every byte (comments, layout) outside the edited part.

The manifest is composed into YAML nodes only to find positions; edits splice lines into the
original text. Callers load the result with manifest.load_manifest before writing it. One editor
for every caller: split, refresh and port (whose specifier arithmetic is in port.edits).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from sgpatch.errors import SgpatchError


def compose(text: str, path: Path):
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:  # the manifest loaded before; a bug if this happens
        raise SgpatchError(f"{path}: cannot re-read: {e}") from None


def get(node, key: str):
    """The value node of `key` in a mapping node, or None."""
    for k, v in node.value:
        if k.value == key:
            return v
    return None


def patch_item(root, patch_id: str):
    for item in get(root, "patches").value:
        if get(item, "id").value == patch_id:
            return item
    raise SgpatchError(f"patch {patch_id} not found in the manifest text")


def _key_node(item, key: str):
    for k, _ in item.value:
        if k.value == key:
            return k
    return None


def _eol(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _end_line(lines: Sequence[str], node) -> int:
    """The index of the first line after a block node. Blank and comment lines at its end are
    left outside (a comment above the next entry belongs to that entry)."""
    mark = node.end_mark
    at_start = mark.line >= len(lines) or not lines[mark.line][: mark.column].strip()
    end = min(mark.line if at_start else mark.line + 1, len(lines))
    while end > node.start_mark.line + 1 and (
        not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
    ):
        end -= 1
    return end


def replace_key(text: str, path: Path, patch_id: str, key: str, new_lines: Sequence[str]) -> str:
    """Replace `key:` and its value in a patch's mapping by `new_lines` (no line endings), or
    insert them after the patch's `upstream`/`requires`/`optional` key when it has none."""
    lines = text.splitlines(keepends=True)
    item = patch_item(compose(text, path), patch_id)
    eol = _eol(text)
    knode, vnode = _key_node(item, key), get(item, key)
    block = [ln + eol for ln in new_lines]
    if knode is not None:
        start = knode.start_mark.line
        return "".join([*lines[:start], *block, *lines[_end_line(lines, vnode) :]])
    after = None
    for name in ("optional", "requires", "upstream", "type", "summary"):
        if get(item, name) is not None:
            after = get(item, name)
            break
    if after is None:  # pragma: no cover - id, summary, type and upstream are required
        raise SgpatchError(f"{path}: patch {patch_id}: cannot place {key}")
    at = _end_line(lines, after)
    return "".join([*lines[:at], *block, *lines[at:]])


def insert_after_patch(text: str, path: Path, patch_id: str, entry: Sequence[str]) -> str:
    """Insert a new patch entry (lines without endings, starting `- id: ...` at column 0)
    right after the entry of `patch_id`, indented like it."""
    lines = text.splitlines(keepends=True)
    item = patch_item(compose(text, path), patch_id)
    indent = max(item.start_mark.column - 2, 0)
    at = _end_line(lines, item)
    eol = _eol(text)
    block = [eol] + [(" " * indent + ln if ln else "") + eol for ln in entry]
    if at == len(lines) and lines and not lines[-1].endswith("\n"):
        lines[-1] += eol
    return "".join([*lines[:at], *block, *lines[at:]])


def patch_key_indent(text: str, path: Path, patch_id: str) -> int:
    """The column of a patch entry's keys (`id`, `summary`, ...)."""
    return patch_item(compose(text, path), patch_id).start_mark.column


def _replace(text: str, node, value: str) -> str:
    return text[: node.start_mark.index] + f'"{value}"' + text[node.end_mark.index :]


def set_variant_spec(text: str, path: Path, patch_id: str, index: int, spec: str) -> str:
    """Replace the `sglang:` value of the patch's variant number `index` (0-based)."""
    items = get(patch_item(compose(text, path), patch_id), "variants").value
    return _replace(text, get(items[index], "sglang"), spec)


def set_variant_value(
    text: str,
    path: Path,
    patch_id: str,
    index: int,
    key: str,
    value: str,
    *,
    only_if_present: bool = False,
) -> str:
    """Replace the `key:` value of the patch's variant number `index` (0-based); a key the
    variant lacks is added to its flow mapping (`{...}`), or left out with `only_if_present`."""
    items = get(patch_item(compose(text, path), patch_id), "variants").value
    node = get(items[index], key)
    if node is not None:
        return _replace(text, node, value)
    if only_if_present:
        return text
    if not items[index].flow_style:
        raise SgpatchError(f"{path}: variant {index + 1} of {patch_id} must be a {{...}} to edit")
    end = items[index].end_mark.index - 1  # the closing brace
    return text[:end].rstrip() + f', {key}: "{value}"' + text[end:]


def insert_first_variant(
    text: str, path: Path, patch_id: str, spec: str, patch_rel: str, base: str | None = None
) -> str:
    """Insert `- {sglang: SPEC, patch: FILE[, base: V]}` as the patch's first variant."""
    extra = f', base: "{base}"' if base else ""
    return _insert_first(text, path, patch_id, f'sglang: "{spec}", patch: {patch_rel}{extra}')


def insert_first_na_variant(text: str, path: Path, patch_id: str, spec: str, na: str) -> str:
    """Insert `- {sglang: SPEC, na: "WHY"}` as the patch's first variant."""
    return _insert_first(text, path, patch_id, f'sglang: "{spec}", na: {json.dumps(na)}')


def _insert_first(text: str, path: Path, patch_id: str, body: str) -> str:
    root = compose(text, path)
    seq = get(patch_item(root, patch_id), "variants")
    if seq.flow_style or not seq.value:
        raise SgpatchError(f"{path}: variants of {patch_id} must be a block list to edit them")
    first = seq.value[0]
    col = first.start_mark.column - 2
    lines = text.splitlines(keepends=True)
    idx = first.start_mark.line
    if lines[idx][col : col + 2] != "- ":
        raise SgpatchError(f"{path}:{idx + 1}: unexpected variant layout; edit it by hand")
    eol = "\r\n" if lines[idx].endswith("\r\n") else "\n"
    new = " " * col + f"- {{{body}}}" + eol
    return "".join([*lines[:idx], new, *lines[idx:]])


def set_set_spec(text: str, path: Path, spec: str) -> str:
    """Replace the set's own `sglang:` range."""
    return _replace(text, get(compose(text, path), "sglang"), spec)


def set_variant_probe(
    text: str, path: Path, patch_id: str, index: int, probe_lines: Sequence[str]
) -> str:
    """Give the patch's variant number `index` its own `probe:` (lines of what goes under the
    key, indented from column 0). A one-line flow variant (`- {sglang: ..., patch: ...}`, as
    port writes them) is rewritten in block style first; a variant that has a probe already
    gets it replaced."""
    import yaml

    items = get(patch_item(compose(text, path), patch_id), "variants").value
    node = items[index]
    lines = text.splitlines(keepends=True)
    eol = _eol(text)
    col = node.start_mark.column
    pad = " " * col
    body = [f"{pad}probe:{eol}"] + [f"{pad}  {ln}{eol}" for ln in probe_lines]
    if node.flow_style:
        if node.start_mark.line != node.end_mark.line:
            raise SgpatchError(f"{path}:{node.start_mark.line + 1}: edit this variant by hand")
        row = lines[node.start_mark.line]
        keys = []
        for k, v in node.value:
            if k.value == "probe":
                continue
            raw = text[v.start_mark.index : v.end_mark.index]
            keys.append(f"{k.value}: {raw}")
        head = row[:col]
        block = [f"{head}{keys[0]}{eol}"] + [f"{pad}{kv}{eol}" for kv in keys[1:]]
        tail = row[node.end_mark.column :].strip()
        if tail and not tail.startswith("#"):
            raise SgpatchError(f"{path}:{node.start_mark.line + 1}: edit this variant by hand")
        at = node.start_mark.line
        return "".join([*lines[:at], *block, *body, *lines[at + 1 :]])
    assert isinstance(node, yaml.MappingNode)
    knode, vnode = _key_node(node, "probe"), get(node, "probe")
    if knode is not None:
        start = knode.start_mark.line
        return "".join([*lines[:start], *body, *lines[_end_line(lines, vnode) :]])
    at = _end_line(lines, node)
    return "".join([*lines[:at], *body, *lines[at:]])
