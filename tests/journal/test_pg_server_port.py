"""The tests' PostgreSQL server (bench/pg_server.py) picks a free port, then binds it seconds
later, after initdb: another process (a test's server in the other xdist worker, a Ray node)
may take the port meanwhile. The server then starts on another free port, instead of
failing every PostgreSQL test of the worker's session."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pg_server import PostgresServer


def test_a_port_taken_before_the_server_binds_it_is_traded_for_a_free_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held = int(taken.getsockname()[1])
        server = PostgresServer(fsync=False)
        server.port = held  # as if another process had bound it after it was picked
        try:
            server.start()
            assert server.port != held
            assert f":{server.port}/" in server.url
            with psycopg.connect(server.url) as connection:
                assert connection.execute("SELECT 1").fetchone() == (1,)
        finally:
            server.stop()
