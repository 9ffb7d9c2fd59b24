"""A String that is not UTF-8 (reverse('абв'), left() cutting a character, bytes read from
a file) is written byte for byte as ClickHouse writes it, in every output format, and
never raises (it used to escape as UnicodeEncodeError from the writer)."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.engine.formats import write_table

pytestmark = pytest.mark.chdb

Q = ("SELECT reverse('абв') AS r, 'x\"y\\tz' AS q, 1 AS n, [reverse('аб'), 'ok'] AS arr, "
     "left('абв', 3) AS cut")
SAME = ["TSV", "TabSeparatedWithNames", "CSV", "CSVWithNames", "JSONEachRow", "Vertical", "Markdown"]


@pytest.mark.parametrize("fmt", SAME)
def test_invalid_utf8_written_as_clickhouse_writes_it(chdb, fmt):
    with skipidx.connect() as db:
        r = db.sql(Q)
        ours = write_table(r.to_arrow(), fmt, types=r.types)
    assert ours == chdb.query(Q, fmt).bytes()


@pytest.mark.parametrize("fmt", ["Pretty", "PrettyCompact", "JSON"])
def test_invalid_utf8_never_raises(fmt):
    with skipidx.connect() as db:
        r = db.sql(Q)
        out = write_table(r.to_arrow(), fmt, types=r.types)
    assert "абв".encode()[::-1] in out
