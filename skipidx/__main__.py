"""``python -m skipidx ...`` is the ``skipidx`` command."""
import os

# skipidx does no BLAS work: without this, numpy's OpenBLAS starts a server thread per core
# that spins for a while after the import, CPU a short command would rather use itself.
# Only in the program's own process (set before numpy loads); the caller's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from skipidx.apps.cli import run  # noqa: E402  (after the variable: it imports numpy)

run()
