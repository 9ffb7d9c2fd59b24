"""The facade: a Database drives each statement (parse -> bind -> plan -> prune -> scan) and returns a Result."""
from skipidx.engine.database import Database
from skipidx.engine.result import Result

__all__ = ["Database", "Result"]
