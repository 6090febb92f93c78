"""A throw-away PostgreSQL server in a temporary directory, for tests and benchmarks.

``initdb`` (once a process; a copy of its directory for each server after the first) +
``pg_ctl`` into a fresh directory on a free port on 127.0.0.1.
As root (sessions and CI run as root, and initdb refuses root) every server
command runs as the ``postgres`` user through ``runuser``. ``stop`` asks
``pg_ctl stop -m fast`` first, then SIGTERM, then SIGKILL, and checks that the
postmaster is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ("INSTALL_HINT", "PostgresServer", "alive", "running_server")

INSTALL_HINT = (
    "the PostgreSQL tests need the server binaries initdb and pg_ctl, on PATH or in "
    "/usr/lib/postgresql/*/bin: apt-get install postgresql (Debian, Ubuntu), or your "
    "platform's PostgreSQL server package"
)


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
        if not candidates:
            raise FileNotFoundError(f"{name} not found; {INSTALL_HINT}")
        found = str(candidates[-1])
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# One initdb'd data directory per process, copied for every server after it: initdb is
# most of a server's start (3-8 s on a loaded 2-core machine), a copy a fraction of it.
_TEMPLATE: list[Path] = []


class _PortTaken(RuntimeError):
    """The server could not bind its port: another process holds it."""


class PostgresServer:
    """One server; ``url`` reaches its ``postgres`` database as the ``postgres`` user."""

    def __init__(self, *, fsync: bool = True) -> None:
        self._initdb = _binary("initdb")
        self._pg_ctl = _binary("pg_ctl")
        self._as_postgres = os.geteuid() == 0
        self.directory = Path(tempfile.mkdtemp(prefix="regiment-pg-"))
        self.data = self.directory / "data"
        self.port = _free_port()
        self._fsync = fsync
        self._pid: int | None = None

    def _command(self, *args: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *args] if self._as_postgres else list(args)

    def _run(self, *args: str, timeout: float = 120) -> None:
        done = subprocess.run(
            self._command(*args), capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}"
            )

    def start(self) -> None:
        """initdb (a copy of this process's first), then start and wait until it accepts
        connections. The port was free when it was picked, but another process (a test's
        server, a Ray node) may bind it before the server does: then the server starts on
        another free port (``port`` and ``url`` change), a few times before giving up."""
        self._give_to_postgres(self.directory)
        self._run("cp", "-a", str(self._template()), str(self.data))
        for attempt in range(1, 6):
            try:
                self._start_once()
                return
            except _PortTaken:
                if attempt == 5:
                    raise
            self.port = _free_port()

    def _give_to_postgres(self, directory: Path) -> None:
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(directory, entry.pw_uid, entry.pw_gid)

    def _template(self) -> Path:
        """This process's initdb'd data directory (made on first use, removed at exit)."""
        if not _TEMPLATE:
            folder = Path(tempfile.mkdtemp(prefix="regiment-pg-template-"))
            atexit.register(shutil.rmtree, folder, True)
            self._give_to_postgres(folder)
            data = folder / "data"
            self._run(self._initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
            _TEMPLATE.append(data)
        return _TEMPLATE[0]

    def halt(self) -> None:
        """Stop the server (``pg_ctl stop -m fast``), keeping its data: it is down until
        ``start_again``, as a restart or a fail-over leaves it meanwhile."""
        self._run(self._pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "-t", "20", "stop")

    def start_again(self, *, port_wait: float = 30.0) -> None:
        """Start the server on its data directory and port, and wait until it accepts. Its
        clients know it by that port, so it cannot move: while another process holds the
        port (bound it while the server was down), it tries again every quarter second for
        up to ``port_wait`` seconds, then raises ``RuntimeError`` naming the port."""
        deadline = time.monotonic() + port_wait
        while True:
            try:
                self._start_once()
                return
            except _PortTaken as taken:
                if time.monotonic() >= deadline:
                    raise RuntimeError(
                        f"PostgreSQL could not start again on port {self.port}: another "
                        f"process still held it after {port_wait:g}s of retries (its clients "
                        f"reach it there, so it cannot move); see who holds it with "
                        f"`ss -ltnp 'sport = :{self.port}'` and stop that process"
                    ) from taken
            time.sleep(0.25)

    def _start_once(self) -> None:
        """``pg_ctl start`` once; ``_PortTaken`` when its port was in use."""
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"
        if not self._fsync:
            options += " -c fsync=off -c synchronous_commit=off"
        log = self.directory / "server.log"
        written = log.stat().st_size if log.exists() else 0
        try:
            self._run(
                self._pg_ctl,
                "-D",
                str(self.data),
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            )
        except RuntimeError as failed:
            said = log.read_bytes()[written:] if log.exists() else b""
            if b"Address already in use" in said:
                raise _PortTaken(f"port {self.port} is in use: {failed}") from failed
            raise
        self._pid = int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        """Stop it (fast shutdown, then SIGTERM, then SIGKILL); remove the directory."""
        try:
            if self._pid is not None:
                with contextlib.suppress(subprocess.TimeoutExpired, RuntimeError):
                    self._run(
                        self._pg_ctl,
                        "-D",
                        str(self.data),
                        "-m",
                        "fast",
                        "-w",
                        "-t",
                        "20",
                        "stop",
                        timeout=30,
                    )
                _escalate(self._pid)
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def url(self) -> str:
        """Its ``postgres`` database as the ``postgres`` user."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def pid(self) -> int | None:
        """The postmaster's process id, once started."""
        return self._pid


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its reaper does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def _escalate(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not alive(pid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    if alive(pid):
        raise RuntimeError(f"the PostgreSQL postmaster {pid} survived SIGKILL")


@contextlib.contextmanager
def running_server(*, fsync: bool = True) -> Iterator[PostgresServer]:
    """A started server, stopped (and checked gone) on exit."""
    server = PostgresServer(fsync=fsync)
    try:
        server.start()
        yield server
    finally:
        server.stop()
