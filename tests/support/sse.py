"""A small threaded SSE reader for tests that hold streams open while doing other requests."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import httpx


class SSEReader:
    """Opens a streaming request in a thread and queues each SSE event as (id, data)."""

    def __init__(self, method: str, url: str, headers: dict[str, str], body: Any = None) -> None:
        self.events: queue.Queue[tuple[str | None, Any] | None] = queue.Queue()
        self.status: int | None = None
        self.headers: httpx.Headers | None = None
        self._ready = threading.Event()
        self._client = httpx.Client(timeout=httpx.Timeout(30, read=30))
        self._args = (method, url, headers, body)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        method, url, headers, body = self._args
        try:
            with self._client.stream(method, url, headers=headers, json=body) as r:
                self.status, self.headers = r.status_code, r.headers
                self._ready.set()
                eid: str | None = None
                data: list[str] = []
                for line in r.iter_lines():
                    if line.startswith("id:"):
                        eid = line[3:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif line == "":
                        if data and data[0]:
                            text = "".join(data)
                            try:
                                self.events.put((eid, json.loads(text)))
                            except ValueError:
                                self.events.put((eid, text))
                        eid, data = None, []
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._ready.set()
            self.events.put(None)

    def next(self, timeout: float = 10) -> tuple[str | None, Any] | None:
        return self.events.get(timeout=timeout)

    def messages_until(self, predicate: Any, timeout: float = 10) -> list[dict[str, Any]]:
        got = []
        while True:
            item = self.next(timeout)
            if item is None:
                return got
            got.append(item[1])
            if predicate(item[1]):
                return got

    def close(self) -> None:
        self._client.close()
        self._thread.join(5)


def first_event_then_drop(url: str, body: Any, headers: dict[str, str]) -> str:
    """POST ``body``, read the SSE stream up to its first message, drop the connection, return that event's id."""
    current: str | None = None
    with httpx.Client(timeout=10) as client, client.stream("POST", url, json=body, headers=headers) as r:
        for line in r.iter_lines():
            if line.startswith("id:"):
                current = line[3:].strip()
            if line.startswith("data:") and line[5:].strip():
                break
    assert current is not None, "the stream carried no event id before its first message"
    return current
