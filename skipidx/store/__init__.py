"""store stage of skipidx: tables, parts, commits, merges, external tables (docs/design.md, "Layout")."""
