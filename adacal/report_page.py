"""The page `adacal report` writes: one self-contained HTML file (inline CSS, figures embedded as base64 PNG `<img>`s
with alt text, no JavaScript, nothing fetched), built from the sections `adacal.commands.report` computes.

This module only lays out what it is given: a `Section` per part of the report (its title, whether it ran or was
skipped and why, the command that reproduces it alone, its tables and figures); it computes nothing and imports
neither matplotlib nor the metrics. Several inputs are laid out side by side: one row per section, one column per
input.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DONE = "done"
SKIPPED = "skipped"

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0;
       color: #1d232a; background: #ffffff; line-height: 1.45; }
header { background: #20384f; color: #ffffff; padding: 1.2em 2em; }
header h1 { margin: 0 0 0.3em 0; font-size: 1.6em; }
header p { margin: 0.15em 0; font-size: 0.95em; }
main { padding: 0.5em 2em 2em 2em; }
nav ul { columns: 3; padding-left: 1.2em; }
section.part { border-top: 2px solid #d5dde5; margin-top: 1.5em; padding-top: 0.5em; }
h2 { font-size: 1.3em; margin: 0.4em 0; }
h3 { font-size: 1.05em; margin: 0.4em 0; color: #3b5368; }
.columns { display: grid; gap: 1.5em; grid-template-columns: repeat(var(--inputs), minmax(0, 1fr)); }
.status { display: inline-block; font-size: 0.8em; font-weight: 600; padding: 0.1em 0.6em; border-radius: 0.8em; }
.status.done { background: #d9f2e3; color: #1b6b3c; }
.status.skipped { background: #fbe9d0; color: #8a4b00; }
.reason { background: #fff8ee; border-left: 4px solid #e0a040; padding: 0.4em 0.8em; }
pre { background: #f3f5f7; padding: 0.5em 0.8em; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.2em; }
th, td { border-bottom: 1px solid #d5dde5; padding: 0.2em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.chosen td { font-weight: 700; background: #eef6ff; }
figure { margin: 0.8em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e8ed; }
figcaption { font-size: 0.85em; color: #4a5a6a; }
ul.notes { font-size: 0.88em; color: #4a5a6a; }
"""


@dataclass(frozen=True)
class Table:
    """A table of text cells: `header` names the columns; a row whose index is in `chosen` is emphasised."""

    caption: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    chosen: Sequence[int] = ()


@dataclass(frozen=True)
class Picture:
    """A figure as PNG bytes, with the alt text a reader without the image gets and a caption."""

    alt: str
    png: bytes
    caption: str = ""


@dataclass
class Section:
    """One part of the report for one input: `status` DONE or SKIPPED (then `reason` says why), `command` the
    command line (or Python lines) that reproduces it alone, `numbers` what goes into report.json."""

    key: str
    title: str
    command: str
    status: str = DONE
    reason: str | None = None
    tables: list[Table] = field(default_factory=list)
    pictures: list[Picture] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The section as report.json holds it (figures by their alt text, the numbers they show in `numbers`)."""
        return {"title": self.title, "status": self.status, "reason": self.reason, "command": self.command,
                "figures": [picture.alt for picture in self.pictures], "notes": list(self.notes),
                "numbers": self.numbers}


def skipped(key: str, title: str, command: str, reason: str) -> Section:
    """A section that did not run, saying why.

        >>> skipped("ood", "OOD", "adacal ood RUN", "needs a run folder").status
        'skipped'
    """
    return Section(key, title, command, status=SKIPPED, reason=reason)


def data_uri(png: bytes) -> str:
    """`png` as a data: URI an `<img>` shows without any file beside the page.

        >>> data_uri(b"\\x89PNG")
        'data:image/png;base64,iVBORw=='
    """
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _text(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(table: Table) -> str:
    head = "".join(f"<th scope=\"col\">{_text(cell)}</th>" for cell in table.header)
    rows = []
    for index, row in enumerate(table.rows):
        marked = ' class="chosen"' if index in table.chosen else ""
        rows.append(f"<tr{marked}>" + "".join(f"<td>{_text(cell)}</td>" for cell in row) + "</tr>")
    return (f"<table><caption>{_text(table.caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _section_body(section: Section) -> str:
    parts = [f'<p><span class="status {_text(section.status)}">{_text(section.status)}</span></p>']
    if section.reason:
        parts.append(f'<p class="reason">Skipped: {_text(section.reason)}</p>')
    parts.append(f"<p>Reproduce this section alone:</p><pre><code>{_text(section.command)}</code></pre>")
    parts.extend(_table(table) for table in section.tables)
    for picture in section.pictures:
        caption = f"<figcaption>{_text(picture.caption)}</figcaption>" if picture.caption else ""
        parts.append(f'<figure><img src="{data_uri(picture.png)}" alt="{_text(picture.alt)}">{caption}</figure>')
    if section.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{_text(note)}</li>" for note in section.notes) + "</ul>")
    return "\n".join(parts)


SUMMARY_KEY = "headline"
SUMMARY_TITLE = "Headline figures"


def render_page(title: str, labels: Sequence[str], sections: Sequence[Sequence[Section]],
                lines: Sequence[str] = (), *, generator: str = "adacal", summary: Table | None = None) -> str:
    """The whole page: a header (`title`, then `lines`), a table of contents, the `summary` table (one row per input,
    when given), then one `<section>` per part with an `<h2>` of its title and, side by side, one column per input
    (`labels[i]` heads the column of `sections[i]`); `generator` goes into `<meta name="generator">`.

    Every input has the same sections in the same order (each is there, done or skipped).

        >>> page = render_page("Report", ["run"], [[skipped("ood", "OOD", "adacal ood RUN", "not yet")]])
        >>> "<h2>OOD</h2>" in page and "Skipped: not yet" in page and "<script" not in page
        True
    """
    if not sections or any(len(column) != len(sections[0]) for column in sections):
        raise ValueError("every input needs the same sections")
    rows = []
    toc = []
    if summary is not None:
        toc.append(f'<li><a href="#{SUMMARY_KEY}">{SUMMARY_TITLE}</a></li>')
        rows.append(f'<section class="part" id="{SUMMARY_KEY}"><h2>{SUMMARY_TITLE}</h2>{_table(summary)}</section>')
    for index, first in enumerate(sections[0]):
        toc.append(f'<li><a href="#{_text(first.key)}">{_text(first.title)}</a></li>')
        columns = []
        for label, column in zip(labels, sections):
            heading = f"<h3>{_text(label)}</h3>" if len(labels) > 1 else ""
            columns.append(f"<div>{heading}{_section_body(column[index])}</div>")
        rows.append(f'<section class="part" id="{_text(first.key)}"><h2>{_text(first.title)}</h2>'
                    f'<div class="columns" style="--inputs: {len(labels)}">{"".join(columns)}</div></section>')
    header = "".join(f"<p>{_text(line)}</p>" for line in lines)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"generator\" content=\"{_text(generator)}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_text(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<header><h1>{_text(title)}</h1>{header}</header>\n<main>\n"
            f"<nav><ul>{''.join(toc)}</ul></nav>\n" + "\n".join(rows) + "\n</main>\n</body>\n</html>\n")


__all__ = ["DONE", "SKIPPED", "SUMMARY_KEY", "SUMMARY_TITLE", "Picture", "Section", "Table", "data_uri", "render_page",
           "skipped"]
