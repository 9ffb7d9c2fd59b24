"""planner stage of skipidx (see ../shared/design.md, "Layout")."""
