"""``serve_command`` called in a thread other than the main one: signals reach only the
main thread, so it cannot watch SIGINT and SIGTERM there. Without ``stop=`` it served
for ever, with nothing that could stop it; now it refuses at once with a ``ConfigError``
that says to pass ``stop=``, and with one it serves until the event is set (from the
main thread, through the loop's token)."""

from __future__ import annotations

import argparse
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx2 as httpx

from regiment.errors import ConfigError
from regiment.serve import serve_command

from .cli_serving import Log
from .teams import support_team


class _Thread(Log):
    """A thread that runs ``serve_command`` on its own event loop (stop=``with_stop``),
    its stderr, and what the call returned or raised. ``settled`` is set once uvicorn
    listens or the call has ended."""

    def __init__(self, *, with_stop: bool) -> None:
        super().__init__()
        self.with_stop = with_stop
        self.settled, self.listening = threading.Event(), False
        self.outcome: list[BaseException | int] = []
        self.stop: tuple[anyio.Event, anyio.lowlevel.EventLoopToken] | None = None
        self.thread = threading.Thread(target=self._body, name="service", daemon=True)
        self.thread.start()
        self.settled.wait()

    def write(self, text: str) -> int:
        if "Uvicorn running on" in text:
            self.listening = True
            self.settled.set()
        return super().write(text)

    def _body(self) -> None:
        try:
            self.outcome.append(anyio.run(self._serve))
        except BaseException as exc:  # what the thread's caller gets: the tests assert it
            self.outcome.append(exc)
        finally:
            self.settled.set()

    async def _serve(self) -> int:
        options = argparse.Namespace(
            host="127.0.0.1",
            port=0,  # uvicorn takes a free one: Log.port
            token=None,
            journal=None,
            keep_runs=None,
            lease_ttl=None,
            verbose=0,
        )
        if self.with_stop:
            self.stop = (anyio.Event(), anyio.lowlevel.current_token())
        stop = None if self.stop is None else self.stop[0]
        return await serve_command(support_team(), options, environ={}, stderr=self, stop=stop)


def test_serve_command_outside_the_main_thread_without_stop_refuses_to_serve() -> None:
    served = _Thread(with_stop=False)
    assert not served.listening, "it served, and nothing could have stopped it"
    (error,) = served.outcome
    assert isinstance(error, ConfigError)
    assert "runs in thread 'service', not the main thread" in str(error)
    assert "pass stop=anyio.Event() and set it to stop serving" in str(error)


def test_serve_command_in_a_thread_serves_until_its_stop_is_set() -> None:
    served = _Thread(with_stop=True)
    assert served.listening, served.outcome
    health = httpx.get(f"http://127.0.0.1:{served.port}/health")
    assert health.json() == {"status": "ok"}
    assert served.stop is not None
    event, token = served.stop
    anyio.from_thread.run_sync(event.set, token=token)  # set from this (the main) thread
    served.thread.join()
    assert served.outcome == [0]
