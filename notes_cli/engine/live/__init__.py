"""The live engine: the core driven by a wall clock (`service.LiveEngine`) and the event loop
that keeps its pacing precise."""
