"""Spark integration (public name; the code lives in skipidx.apps.spark)."""
from skipidx.apps.spark import *  # noqa: F401,F403
from skipidx.apps.spark import __all__  # noqa: F401
