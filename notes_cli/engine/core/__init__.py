"""The engine's pure core: cost model, hardware profiles, links, scheduler, workers, the offline
simulator and the mock's answers. No clock, no IO, no HTTP.

Imports wire.turn and the bottom layer. Must not import live/, http/, simulate/ or another
middle-layer package: the mock's note answers (`notes.knowledge`) are given to the responder by
the live engine (`live/service.py`), which may import notes/."""
