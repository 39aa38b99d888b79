"""The engine's pure core: cost model, hardware profiles, links, scheduler, workers, the offline
simulator and the mock's answers. No clock, no IO, no HTTP.

Imports wire.turn and the bottom layer. Must not import live/, http/, simulate/ or another
middle-layer package; the mock's note answers (`notes.knowledge`, read by responder.py) are the
one listed exception in tests/test_architecture.py until that knowledge base moves here."""
