"""The engine's HTTP face: the Starlette app, the uvicorn server, errors, faults and metrics."""
