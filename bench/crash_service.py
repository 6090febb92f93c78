"""The service's processes for the kill/resume torture (``crash_serve.py``): ``regiment
serve`` subprocesses, a follower of a run's event stream, and the HTTP calls between."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field

import httpx2 as httpx
from crash_children import HERE, Scenario, killed, regiment

__all__ = ("Follower", "Frame", "Service", "frames")

Frame = tuple[int, str, str]  # a numbered SSE frame: id, event type, data


# uvicorn's line once it listens; given --port 0, it names the port it took.
_LISTENING = re.compile(r"Uvicorn running on (http://[^\s:]+:\d+)")


class Service:
    """A ``regiment serve`` of the scenario's team on its journal, on the free port it
    takes itself (``--port 0``): a port picked here by binding and closing a socket could
    be taken by another process (a test's server, a PostgreSQL) before the service bound
    it. ``url`` and ``http`` reach it once ``ready()`` has said it listens."""

    def __init__(self, scenario: Scenario, name: str) -> None:
        self.folder = scenario.folder
        self.log = scenario.folder / f"{name}.log"
        self.url = ""  # known once it listens (ready)
        args = ["serve", str(scenario.team), "--journal", scenario.journal]
        args += ["--port", "0", "--app-dir", str(HERE)]
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                regiment(*args), env=scenario.env(), stdout=log, stderr=log,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        self.http = httpx.Client(timeout=60)  # its base_url is set by ready()

    def ready(self, timeout: float = 60) -> bool:
        """Whether it listens (False: it exited first); sets ``url`` to where."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listening = _LISTENING.search(self.log.read_text())
            if listening is not None:
                self.url = listening[1]
                self.http.base_url = httpx.URL(self.url)
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.01)
        raise TimeoutError(f"regiment serve did not listen in {timeout} s: {self.tail()}")

    def kill_after(self, delay: float) -> int:
        try:
            return self.process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            return killed(self.folder, self.process)
        finally:
            self.http.close()  # its connections died with it

    def stop(self) -> int:
        """SIGTERM, as a service is stopped; its exit code."""
        self.http.close()
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=60)

    def tail(self) -> str:
        lines = self.log.read_text().strip().splitlines() if self.log.exists() else []
        return lines[-1] if lines else ""

    def errors(self) -> list[str]:
        """Its log's tracebacks and ERROR lines."""
        text = self.log.read_text() if self.log.exists() else ""
        return [x for x in text.splitlines() if "Traceback" in x or " ERROR " in x]


def frames(body: str) -> list[Frame]:
    """The numbered frames of an SSE body (comments and unnumbered frames left out)."""
    found: list[Frame] = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "id" in fields:
            found.append((int(fields["id"]), fields.get("event", ""), fields.get("data", "")))
    return found


@dataclass
class Follower:
    """A thread following ``GET /runs/{id}/events`` after ``last`` until the stream ends
    or breaks (its service killed); the numbered frames it got, in order."""

    url: str
    run_id: str
    last: int = 0
    got: list[Frame] = field(default_factory=list)
    ended: str = ""  # "end" (the stream closed), "broke: ...", "status N"
    thread: threading.Thread | None = None

    def start(self) -> Follower:
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()
        return self

    def _follow(self) -> None:
        headers = {"Last-Event-ID": str(self.last)} if self.last else {}
        try:
            with (
                httpx.Client(base_url=self.url, timeout=httpx.Timeout(60, read=120)) as client,
                client.stream("GET", f"/runs/{self.run_id}/events", headers=headers) as answer,
            ):
                if answer.status_code != 200:
                    self.ended = f"status {answer.status_code}"
                    return
                block: list[str] = []
                for line in answer.iter_lines():
                    if line:
                        block.append(line)
                        continue
                    self.got += frames("\n".join(block))
                    block = []
                self.ended = "end"
        except httpx.HTTPError as exc:
            self.ended = f"broke: {type(exc).__name__}"

    def join(self, timeout: float = 120) -> None:
        assert self.thread is not None
        self.thread.join(timeout)

    def count(self) -> int:
        return len(self.got)

    def terminal(self) -> str | None:
        """The type of its last event if that ends the stream (RunCompleted/RunFailed)."""
        if self.got and self.got[-1][1] in ("RunCompleted", "RunFailed"):
            return self.got[-1][1]
        return None


def paused_at(frame: Frame) -> bool:
    return frame[1] == "RunCompleted" and json.loads(frame[2]).get("result", {}).get("status") in (
        "paused",
    )
