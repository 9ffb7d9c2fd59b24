"""``python -m skipidx ...`` is the ``skipidx`` command."""
from skipidx.apps.cli import run

run()
