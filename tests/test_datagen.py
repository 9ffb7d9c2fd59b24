"""The generated log data resumes at a batch boundary with the same rows (bench/bench_100m.py relies on it)."""
import pytest

from skipidx.apps import datagen


def test_generate_from_a_start_row_gives_the_same_batches():
    full = list(datagen.generate(5000, 7, batch_rows=1000))
    tail = list(datagen.generate(5000, 7, batch_rows=1000, start=2000))
    assert len(tail) == 3
    for a, b in zip(full[2:], tail):
        assert a.equals(b)
    with pytest.raises(ValueError):
        next(datagen.generate(5000, 7, batch_rows=1000, start=1500))
