"""The bundled mock Prefill/Decode engine behind `pdnotes engine`:

    core/      profiles, roofline cost model, scheduler, workers, the offline simulator (pure)
    live/      the core on a wall clock (`engine serve`)
    http/      the Starlette app and uvicorn server that serve it, faults and metrics
    simulate/  `engine simulate`: the core on a virtual clock, across rates and configurations

Imports wire/ (its dialects), bench/ (simulate's workloads and statistics) and the bottom layer.
Must not import plan/ (which builds on it), gateway/ (it serves HTTP, never calls it), cli/ or
render/. `engine plan` and `engine sketch` live in plan/; docs/architecture.md says why.
"""
