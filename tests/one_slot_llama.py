"""A llama.cpp-like server on a real loopback socket: one slot that serves requests first come,
first served, and a prompt cache that keeps every prompt it has processed (llama-server's
host-memory prompt cache does), reporting `timings` as llama-server does (`cache_n`,
`prompt_n`, `prompt_ms`, `predicted_per_token_ms`; no queue time) and its queue in `/metrics`
(`llamacpp:requests_deferred`).

    with OneSlotLlama(prompt_s=0.05, tpot_s=0.05) as llama:
        llama.base_url   # …/v1

The slot is a schedule, not a lock: a request that arrives while the slot is busy starts when
the one before it ends, and its stream is paced to that schedule (the pauses are the loopback
server's, ended early when it stops). `waited` counts the requests that found the slot busy:
what a client's report of the server's queue must match. `together=N` holds the first
request until N have arrived (at most 10 s) and lets the N meet the slot at the moment the last
arrived, so N requests sent together make exactly N - 1 of them wait, however loaded the
machine is.
"""

from __future__ import annotations

import threading
import time

from loopback import LoopbackServer, Received, Reply, sse_event

MODEL = "one-slot"


class OneSlotLlama:
    def __init__(
        self, prompt_s: float = 0.0, tpot_s: float = 0.0, timings: bool = True, together: int = 0
    ) -> None:
        self.prompt_s, self.tpot_s = prompt_s, tpot_s
        self.together = together
        self.waited = 0  # requests that arrived while the slot was busy
        self._arrived = threading.Condition()
        self._arrivals = 0
        self._met_at: float | None = None  # when the `together` group had all arrived
        self.timings = timings  # False: answers carry no `timings` (only /metrics tells)
        self.prompts: list[list[str]] = []  # every prompt processed, as words (the cache)
        self._lock = threading.Lock()
        self._free_at = 0.0  # monotonic time the slot is next free
        self._starts: list[float] = []  # when each request got the slot
        self._server = LoopbackServer(self._handle)

    @property
    def base_url(self) -> str:
        return self._server.url + "/v1"

    def __enter__(self) -> OneSlotLlama:
        self._server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.__exit__(*exc)

    def _handle(self, request: Received) -> Reply:
        if request.path.endswith("/models"):
            return Reply.json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        if request.path == "/metrics":
            return self._metrics()
        body = request.json()
        words = " ".join(m["content"] for m in body["messages"]).split()
        n_out = int(body.get("max_tokens") or 4)
        with self._arrived:
            self._arrivals += 1
            if self._arrivals == self.together:
                self._met_at = time.monotonic()
            self._arrived.notify_all()
            grouped = self._arrivals <= self.together
            if self._arrivals == 1 and self.together:
                self._arrived.wait_for(lambda: self._arrivals >= self.together, timeout=10)
        with self._lock:
            cached = max((_common(words, seen) for seen in self.prompts), default=0)
            self.prompts.append(words)
            # the group sent together meets the slot at one moment, the last arrival's: which
            # thread reaches the lock first, and how late a loaded machine wakes the other,
            # decides only which of them waits, never whether one does
            now = self._met_at if grouped and self._met_at is not None else time.monotonic()
            start = max(now, self._free_at)
            self.waited += start > now
            self._free_at = start + self.prompt_s + (n_out - 1) * self.tpot_s
            self._starts.append(start)
        return Reply.sse(self._stream(start - now, cached, len(words) - cached, n_out))

    def _stream(
        self, wait_s: float, cache_n: int, prompt_n: int, n_out: int
    ) -> list[bytes | float]:
        base = {"id": "c1", "object": "chat.completion.chunk", "model": MODEL}
        events: list[bytes | float] = [wait_s + self.prompt_s]
        for index in range(n_out):
            if index:
                events.append(self.tpot_s)
            delta = {"content": f" w{index}"}
            events.append(sse_event({**base, "choices": [{"index": 0, "delta": delta}]}))
        usage = {
            "prompt_tokens": cache_n + prompt_n,
            "completion_tokens": n_out,
            "total_tokens": cache_n + prompt_n + n_out,
        }
        timings = {
            "cache_n": cache_n,
            "prompt_n": prompt_n,
            "prompt_ms": self.prompt_s * 1000,
            "predicted_n": n_out,
            "predicted_ms": (n_out - 1) * self.tpot_s * 1000,
            "predicted_per_token_ms": self.tpot_s * 1000,
        }
        finish = {"index": 0, "delta": {}, "finish_reason": "length"}
        events += [
            sse_event({**base, "choices": [finish]}),
            sse_event(
                {
                    **base,
                    "choices": [],
                    "usage": usage,
                    **({"timings": timings} if self.timings else {}),
                }
            ),
            b"data: [DONE]\n\n",
        ]
        return events

    def _metrics(self) -> Reply:
        with self._lock:
            now = time.monotonic()
            deferred = sum(1 for start in self._starts if start > now)
        text = (
            "# TYPE llamacpp:requests_deferred gauge\n"
            f"llamacpp:requests_deferred {deferred}\n"
            "# TYPE llamacpp:requests_processing gauge\n"
            f"llamacpp:requests_processing {1 if now < self._free_at else 0}\n"
        )
        return Reply(200, {"content-type": "text/plain; version=0.0.4"}, [text.encode()])


def _common(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
