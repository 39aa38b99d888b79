"""`pdnotes bench` and the measuring tools the simulator and the planner share: workloads
(synthetic lengths, named length tables, JSONL traces, arrivals), closed-loop concurrency,
flat-memory latency statistics and SLOs, the goodput (capacity) search, and the load generator
that sends a workload to a real endpoint.

Imports gateway/ and clients/ (the load generator's HTTP) and the bottom layer. Must not import
engine/ or plan/, which build on it (`engine simulate` lives in engine/simulate), nor cli/ or
render/.
"""
