"""Report tables: one frame, rendered as Markdown and HTML by one helper."""

from __future__ import annotations

import polars as pl
import pytest

from hotmem_eval.errors import EvalError
from hotmem_eval.report_html import blocks_html
from hotmem_eval.tables import Table, html_table, markdown, markdown_table, table, text_frame


def test_a_markdown_table_escapes_pipes_folds_lines_and_aligns_numbers() -> None:
    frame = text_frame(["name", "n"], [("a | b", 3), ("line\nbreak", None)])
    assert markdown_table(frame, right=["n"]) == [
        "| name | n |",
        "|---|---:|",
        "| a \\| b | 3 |",
        "| line break | – |",
    ]


def test_headers_replace_the_column_names() -> None:
    frame = text_frame(["a", "b"], [("1", "2")])
    assert markdown_table(frame, headers=["x", "x"])[0] == "| x | x |"
    with pytest.raises(EvalError, match=r"expected 2 headers"):
        markdown_table(frame, headers=["x"])
    with pytest.raises(EvalError, match=r"right-aligned columns \['c'\] are not columns"):
        markdown_table(frame, right=["c"])


def test_text_frame_refuses_equal_names_and_ragged_rows() -> None:
    with pytest.raises(EvalError, match="expected distinct column names"):
        text_frame(["a", "a"], [])
    with pytest.raises(EvalError, match="expected rows of 2 cells"):
        text_frame(["a", "b"], [("1",)])
    assert text_frame(["a"], []).schema == pl.Schema({"a": pl.String()})


def test_an_html_table_escapes_text_and_keeps_bold_and_code() -> None:
    frame = text_frame(["rule", "n"], [("**yes** `code` <script>", 1)])
    assert html_table(frame, right=["n"]) == "\n".join(
        [
            "<table>",
            '<thead><tr><th>rule</th><th class="num">n</th></tr></thead>',
            "<tbody>",
            "<tr><td><strong>yes</strong> <code>code</code> &lt;script&gt;</td>"
            '<td class="num">1</td></tr>',
            "</tbody>",
            "</table>",
        ]
    )


def test_blocks_render_the_same_table_in_both_formats() -> None:
    block = table(["a", "n"], [("x", 1)], right=["n"])
    assert isinstance(block, Table)
    assert markdown(["text", block]) == ["text", "| a | n |", "|---|---:|", "| x | 1 |"]
    html = blocks_html(["## Heading", "", "**bold** text", "- one", "- two", "", block])
    assert html == [
        "<h2>Heading</h2>",
        "<p><strong>bold</strong> text</p>",
        "<ul><li>one</li><li>two</li></ul>",
        html_table(block.frame, right=["n"]),
    ]


def test_html_text_is_escaped() -> None:
    assert blocks_html(["<img src=x onerror=alert(1)> & *it*"]) == [
        "<p>&lt;img src=x onerror=alert(1)&gt; &amp; <em>it</em></p>"
    ]
