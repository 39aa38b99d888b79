"""The live engine: the core driven by a wall clock (`service.LiveEngine`) and the event loop
that keeps its pacing precise.

Imports core/ only. Must not import http/ (which serves it) or simulate/."""
