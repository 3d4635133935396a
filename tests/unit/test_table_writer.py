"""The one table writer: aligned text and Markdown tables from rows of text cells."""

from zodbshootout.render.table_writer import aligned, dashes, escape_markdown, markdown

ROWS = [["name", "rate"], ["zeo|fs", "12"], ["sqlite", "1234"]]


def test_aligned_pads_columns_and_right_aligns_the_numbers():
    assert aligned(ROWS, right={1}) == ["name    rate", "zeo|fs    12", "sqlite  1234"]
    assert dashes(ROWS) == "------  ----"


def test_aligned_can_indent_and_keep_trailing_spaces():
    rows = [["a", "b"], ["long", ""]]
    assert aligned(rows, right=set(), indent="  ", strip=False) == ["  a     b", "  long   "]
    assert aligned(rows, right=set()) == ["a     b", "long"]


def test_markdown_escapes_pipes_and_marks_the_numeric_columns():
    assert markdown(ROWS, right={1}) == [
        "| name | rate |",
        "| --- | ---: |",
        "| zeo\\|fs | 12 |",
        "| sqlite | 1234 |",
    ]
    assert escape_markdown("a|b") == "a\\|b"


def test_padded_markdown_reads_as_a_table_in_its_source_too():
    assert markdown([["a", "b"], ["x", "1"]], right={1}, padded=True) == [
        "| a   |   b |",
        "| :-- | --: |",
        "| x   |   1 |",
    ]


def test_a_tight_rule_has_no_spaces():
    assert markdown(ROWS, right={1}, tight_rule=True)[1] == "|---|---:|"
