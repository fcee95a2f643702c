"""What the report tests share: tiny inputs for `adacal report` and a reader of its page (html.parser).

Test modules import it by name (`from report_pages import ...`): tests/conftest.py puts tests/ on sys.path.
"""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SECTION_TITLES = ("Calibration metrics", "Reliability diagram", "Post-hoc calibration", "Selective prediction",
                  "Conformal prediction sets", "Training curves", "AdaFocal γ dynamics",
                  "Out-of-distribution detection", "Calibration under dataset shift")
# Every <h2> of a page: the headline table's, then the sections'.
PAGE_HEADINGS = ("Headline figures", *SECTION_TITLES)


def predictions_file(path: Path, *, n: int = 240, num_classes: int = 3, seed: int = 0, val: bool = True) -> Path:
    """An .npz of test (and, with `val`, validation) logits and labels drawn from those logits' softmax (a calibrated
    model at temperature 1, over-confident logits ×2 given): what a user's scored model writes."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for split in ("val", "test") if val else ("test",):
        logits = rng.normal(0.0, 1.5, (n, num_classes))
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        labels = np.array([rng.choice(num_classes, p=row) for row in probs])
        arrays[f"{split}_logits"], arrays[f"{split}_labels"] = 2.0 * logits, labels
    np.savez(path, **arrays)
    return path


class PageReader(HTMLParser):
    """Every tag with its attributes, the text under each heading level, and parse errors (unclosed tags)."""

    VOID = {"meta", "img", "br", "hr", "link", "input", "source"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.headings: dict[str, list[str]] = {"h1": [], "h2": [], "h3": []}
        self.text: list[str] = []
        self.open: list[str] = []
        self.errors: list[str] = []
        self._heading: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)
        if tag in self.headings:
            self._heading = tag
            self.headings[tag].append("")

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1] if self.open else 'nothing'}")
        else:
            self.open.pop()
        if tag == self._heading:
            self._heading = None

    def handle_data(self, data):
        self.text.append(data)
        if self._heading is not None:
            self.headings[self._heading][-1] += data


def read_page(path: Path) -> PageReader:
    reader = PageReader()
    reader.feed(Path(path).read_text(encoding="utf-8"))
    reader.close()
    return reader


def image_bytes(src: str) -> bytes:
    """The bytes of a data:image/png;base64 URI (AssertionError for any other reference)."""
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:60]
    return base64.b64decode(src[len(prefix):], validate=True)
