"""The engine's pure core: cost model, hardware profiles, links, scheduler, workers, the offline
simulator and the mock's answers. No clock, no IO, no HTTP."""
