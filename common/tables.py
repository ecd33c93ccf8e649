"""Tables a person reads: tab-separated text with a header row, one record a line.

Pipeline position: after a task's predictions, where they are written for people (the
`test_predictions*.tsv` files beside the original's bare `test_results.tsv`); a
spreadsheet or `csv.DictReader(f, delimiter="\\t")` reads them back.
"""


def cell(value):
    """A value as one cell: a float with 6 decimals, text with its tabs and line breaks
    made spaces (they would split the cell or the row)."""
    if isinstance(value, float):
        return f"{value:.6f}"
    return " ".join(str(value if value is not None else "").split())


def tsv(header, rows):
    """The text of a table: `header` (names), then each row of `rows` (sequences of
    values, as many as the header's)."""
    lines = ["\t".join(cell(name) for name in header)]
    lines.extend("\t".join(cell(value) for value in row) for row in rows)
    return "\n".join(lines) + "\n"
