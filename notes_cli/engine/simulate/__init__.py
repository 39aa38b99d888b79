"""`pdnotes engine simulate`: deployments × offered rates replayed through the engine's own
scheduler on a virtual clock, folded into bench's flat-memory statistics.

    configs.py           what to simulate (SimConfig), as resolved (Resolved), the Simulator seam
    runner.py            measure one point, sweep rates, search goodput → SimulateReport
    engine_simulator.py  the default Simulator: engine/core's simcore with catalog presets
    plot.py              `--plot FILE.html`: SLO attainment against per-chip rate (inline SVG)
    measured_runs.py     published closed-loop serving runs replayed through `simulate -c`

It lives under engine/ because it serves an `engine` command and drives engine/core; bench/
lends it workloads, statistics and the goodput search, and never imports it back. Must not
import cli/, render/, or a server (engine/http, engine/live): its only clock is the simulated one.
"""
