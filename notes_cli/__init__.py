"""pdnotes: connect coding clients to LLM gateways, write PD-disaggregation notes, and watch a
mock Prefill/Decode engine serve them."""

__version__ = "0.1.0"
