"""The bridge: Codex (Responses API) and Claude Code (Anthropic Messages) on an endpoint that
serves only chat completions.

    config.py    what to serve (flags, or the upstream `pdnotes config --bridge` recorded)
    client_setup.py  `pdnotes config codex|claude --bridge`: the client file and the record
    translate.py one turn through the wire layer: client protocol → neutral → chat, and back
    app.py       what it answers: routes, auth, errors, streaming with cancellation
    pump.py      one streamed answer, upstream bytes → client bytes, in the read callback
    http1.py     its HTTP/1.1 server (httptools): requests in, answers straight to the socket
    store.py     recent responses, for Responses' `previous_response_id`
    server.py    that server in the foreground (CLI) or on a thread (tests, demo, benchmarks)
    service.py   `pdnotes bridge install`: a systemd user unit / launchd agent

Every HTTP call upstream goes through `notes_cli.gateway.relay`; every protocol conversion
through `notes_cli.wire`. There is no translator per pair of protocols.

`config --bridge` is planned here (client_setup.py), not in clients/, because it writes the
bridge's record: clients/ sits below the bridge and must not import it. Imports clients/,
gateway/, wire/, engine/http (its uvicorn server) and the bottom layer; never cli/ or another
command's core. The one arrow up, to render.log for the server's log lines, is listed in
tests/test_architecture.py.
"""
