"""The coding clients' own files: Codex's config.toml and Claude Code's settings.json read
(bounded), their layers merged the way each client merges them, what each client will call
resolved (`endpoint`, `resolve`), and a change to one client file planned and applied safely
(`plan`), with provider presets as data.

The core modules sit below every command's core: they import only the bottom layer (fileio,
backups, secrets, paths, resources, errors), never gateway/, the bridge, doctor or anything
above; that is why `config --bridge`, which writes the bridge's record, lives in
bridge/client_setup.py. Each client in a folder of its own (`<name>/`, issue 38), the `Client`
Protocol (`plugin`), the registry and `setups` sit one layer up, beside doctor/: a client's
checks make findings, and doctor, smoke and the bridge ask the registry
(docs/architecture.md, "Clients").
"""
