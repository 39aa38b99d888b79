"""A stand-in for NVIDIA aiconfigurator in the tests (tests/test_plan_crosscheck.py)."""
