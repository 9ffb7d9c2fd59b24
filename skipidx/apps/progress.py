"""The progress bar (lives in skipidx.core.progress so the engine's inserts can show it too)."""
from skipidx.core.progress import Progress

__all__ = ["Progress"]
