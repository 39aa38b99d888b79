"""`pdnotes engine simulate`: deployments × offered rates replayed through the engine's own
scheduler on a virtual clock, folded into bench's flat-memory statistics.

    configs.py           what to simulate (SimConfig), as resolved (Resolved), the Simulator seam
    runner.py            measure one point, sweep rates, search goodput → SimulateReport
    engine_simulator.py  the default Simulator: engine/core's simcore with catalog presets

Imports engine/core, bench/ (workloads, stats, goodput) and the bottom layer; never cli/,
render/ or a server (engine/http, engine/live): no clock but the simulated one.
"""
