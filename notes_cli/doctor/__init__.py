"""`pdnotes doctor`: each client resolved once (`resolved`), static checks of its files, URLs,
secrets and environment, live probes of the endpoint it will call (`live`), and every finding,
static or live, built through the registry of finding ids (`registry`, `findings`).

Imports clients/, gateway/ (the live probes), bridge.config (a bridged client's upstream) and the
bottom layer. Must not import cli/ or render/: findings are data that render/doctor draws (the
registry's `__main__`, which prints the findings page, is the one listed exception).
"""
