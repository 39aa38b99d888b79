"""The coding clients' own files: Codex's config.toml and Claude Code's settings.json read
(bounded), their layers merged the way each client merges them, what each client will call
resolved (`endpoint`, `resolve`), and a change to one client file planned and applied safely
(`plan`), with provider presets as data.

Below every command's core: imports only the bottom layer (fileio, backups, secrets, paths,
resources, errors). Must not import gateway/, the bridge, doctor or anything above; that is why
`config --bridge`, which writes the bridge's record, lives in bridge/client_setup.py.
"""
