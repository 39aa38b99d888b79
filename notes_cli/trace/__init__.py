"""Agent-session traces: one format (Mooncake-style JSONL with session and turn fields), its
summary (`pdnotes trace show`), and the prefix-cache replay that `engine simulate --trace` and
`engine plan --trace` use. Pure: reads through format.py, writes nothing but trace files."""
