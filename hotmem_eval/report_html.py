"""The HTML report: one self-contained file (no network, no script, works from ``file://``).

It holds the report's blocks (``report.report_blocks``: the decision first, then the
categories and the folded appendix) with the plots (``plots.render_plots``) after the decision,
each an SVG image embedded as a ``data:`` URI. Text is escaped; the only Markdown the blocks
carry (headings, bullets, ``**bold**``, ``*italic*``, ```code```, ``<details>`` sections, which
the report itself writes) becomes HTML. The same result document and plots give the same bytes.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from hotmem_eval.report import DETAILS, TITLE, report_blocks
from hotmem_eval.tables import Block, Table, html_table

__all__ = ["PLOT_CAPTIONS", "blocks_html", "render_html"]

#: Each plot, in page order: its title and what it shows.
PLOT_CAPTIONS: Final[dict[str, tuple[str, str]]] = {
    "category_metric": (
        "The headline metric per category",
        "Each profile's mean over the queries with a relevant memory, with its 95% bootstrap "
        "interval.",
    ),
    "paired_differences": (
        "Paired differences against the baseline",
        "Candidate minus baseline on the headline metric, query by query, with the 95% "
        "bootstrap interval of the mean difference; a filled marker is significant "
        "(Holm-adjusted p < 0.05).",
    ),
    "channel_scores": (
        "Channel values of relevant and non-relevant candidates",
        "The values of each channel for the memories a query returned in its top k and the "
        "relevant memories it missed; the dashed line is the profile's cosine floor.",
    ),
    "first_relevant_rank": (
        "Rank of the first relevant memory",
        "The share of each category's queries whose first relevant memory is at each rank of "
        "the top k, or not in it.",
    ),
    "latency": (
        "Search latency",
        "Every search call of the run (repeats included), on a log scale; local diagnostics.",
    ),
}

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; color: #1b1b1b; margin: 0; background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2rem; border-bottom: 1px solid #ddd; }
.decision { font-size: 1.1rem; background: #eef5ff; border-left: 4px solid #2f6fd0;
  padding: 0.75rem 1rem; }
table { border-collapse: collapse; margin: 0.75rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f3f3f3; } td.num, th.num { text-align: right; }
tbody tr:nth-child(even) { background: #fafafa; }
code { background: #f3f3f3; padding: 0 0.2rem; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 0.9rem; }
details { margin: 0.5rem 0; } summary { cursor: pointer; font-weight: 600; }
""".strip()

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")
_SUMMARY = re.compile(r"<summary>(.*)</summary>")
_HEADING = re.compile(r"(#{1,3}) (.*)")


def _inline(text: str) -> str:
    escaped = html.escape(text, quote=False)
    escaped = _CODE.sub(r"<code>\1</code>", escaped)
    return _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", escaped))


def _line_html(line: str) -> str | None:
    """A structural line as HTML, or None for a line of running text."""
    if line == DETAILS:
        return "<details>"
    if line == "</details>":
        return line
    summary = _SUMMARY.fullmatch(line)
    if summary:
        return f"<summary>{_inline(summary.group(1))}</summary>"
    heading = _HEADING.fullmatch(line)
    if heading:
        level = len(heading.group(1))
        return f"<h{level}>{_inline(heading.group(2))}</h{level}>"
    return None


def blocks_html(blocks: Sequence[Block]) -> list[str]:
    """Report blocks as HTML: tables by ``tables.html_table``, text lines as paragraphs and
    bullet lists (blank lines end them)."""
    out: list[str] = []
    paragraph: list[str] = []
    bullets: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append("<p>" + " ".join(_inline(p) for p in paragraph) + "</p>")
            paragraph.clear()
        if bullets:
            out.append("<ul>" + "".join(f"<li>{_inline(b)}</li>" for b in bullets) + "</ul>")
            bullets.clear()

    for block in blocks:
        if isinstance(block, Table):
            flush()
            out.append(html_table(block.frame, headers=block.headers, right=block.right))
            continue
        structural = _line_html(block)
        if structural is not None or not block.strip():
            flush()
            if structural is not None:
                out.append(structural)
        elif block.startswith("- "):
            if paragraph:
                flush()
            bullets.append(block[2:])
        else:
            if bullets:
                flush()
            paragraph.append(block)
    flush()
    return out


def _figure(name: str, svg: bytes) -> str:
    title, caption = PLOT_CAPTIONS[name]
    data = base64.b64encode(svg).decode("ascii")
    return (
        f'<figure id="plot-{name}"><h3>{html.escape(title)}</h3>'
        f'<img src="data:image/svg+xml;base64,{data}" alt="{html.escape(title)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def render_html(result: dict[str, Any], plots: Mapping[str, bytes]) -> str:
    """The HTML report of a result document with its plots (``plots.render_plots``)."""
    blocks = report_blocks(result)
    # The title and the decision line, then the rest: the plots go before the categories.
    decision, rest = blocks[2], blocks[4:]
    split = next(i for i, b in enumerate(rest) if b == "## By category")
    figures = [_figure(name, plots[name]) for name in PLOT_CAPTIONS if name in plots]
    body = [
        f"<h1>{html.escape(TITLE)}</h1>",
        f'<p id="decision" class="decision">{_inline(str(decision))}</p>',
        *blocks_html(rest[:split]),
        '<section id="plots"><h2>Plots</h2>',
        *figures,
        "</section>",
        *blocks_html(rest[split:]),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(TITLE)}</title>",
            f"<style>\n{_STYLE}\n</style>",
            "</head>",
            "<body>",
            "<main>",
            *body,
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )
