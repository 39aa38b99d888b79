"""The bridge: Codex (Responses API) and Claude Code (Anthropic Messages) on an endpoint that
serves only chat completions.

    config.py    what to serve (flags, or the upstream `pdnotes config --bridge` recorded)
    translate.py one turn through the wire layer: client protocol → neutral → chat, and back
    app.py       what it answers: routes, auth, errors, streaming with cancellation
    pump.py      one streamed answer, upstream bytes → client bytes, in the read callback
    http1.py     its HTTP/1.1 server (httptools): requests in, answers straight to the socket
    store.py     recent responses, for Responses' `previous_response_id`
    server.py    that server in the foreground (CLI) or on a thread (tests, demo, benchmarks)
    service.py   `pdnotes bridge install`: a systemd user unit / launchd agent

Every HTTP call upstream goes through `notes_cli.gateway.relay`; every protocol conversion
through `notes_cli.wire`. There is no translator per pair of protocols.
"""
