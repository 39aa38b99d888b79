"""`pdnotes engine plan`: search PD deployments for the one that serves a workload at its SLOs
with the fewest chips (or dollars).

Modules, in the order a plan runs them:
- space: the candidate deployments (mode, chips, TP per phase, P:D instance counts, batch, chunk)
- prune: roofline bounds that rule a candidate out before any simulation
- steady: how long a probe or a verification runs at a rate (warm-up, judged part, tail)
- evaluate: one candidate's capacity (highest rate meeting the SLOs) by simulation, and the
  verifications of what the report claims
- run_local / run_ray: evaluate many candidates on local cores or on a Ray cluster
- rank: goodput per chip or per price, the chips-vs-latency Pareto front, binding SLOs
- planner: ties these together into a PlanReport, verifying the top table and the front first
See docs/planner.md.

Also the launch sketches (`launch`, checked against `launch_flags`), which `engine sketch`
borrows: the same sketch is what `engine plan --sketch` prints for its pick.

Imports engine/ (core and simulate), bench/ (workloads, statistics, goodput) and the bottom
layer. Must not import cli/ or render/ (render/plan draws the report), and nothing below imports
plan/.
"""
