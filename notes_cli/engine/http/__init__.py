"""The engine's HTTP face: the Starlette app, the uvicorn server, errors, faults and metrics.

Imports core/, live/, wire/ (each protocol's dialect) and the bottom layer. Must not import
simulate/, gateway/, cli/ or render/."""
