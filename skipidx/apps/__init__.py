"""Applications on top of the engine: the CLI, the demo, the research bench, the Spark pipeline."""
