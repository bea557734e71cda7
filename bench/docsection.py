"""One generated section of docs/benchmarks.md: the text between `<!-- TAG:begin -->` and
`<!-- TAG:end -->` replaced, the rest of the file left as it is (appended at the end, under an
optional heading, when the markers are not there yet). Every bench script writes through it."""

from __future__ import annotations

from pathlib import Path


def update_section(path: Path, tag: str, section: str, heading: str | None = None) -> None:
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    block = f"{begin}\n{section}{end}"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if begin in text and end in text and text.index(begin) < text.index(end):
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + (f"{heading}\n\n" if heading else "") + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
