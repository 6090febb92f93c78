"""The tests' PostgreSQL server (bench/pg_server.py) picks a free port, then binds it seconds
later, after initdb: another process (a test's server in the other xdist worker, a Ray node)
may take the port meanwhile. The server then starts on another free port, instead of
failing every PostgreSQL test of the worker's session."""

from __future__ import annotations

import socket
import sys
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import psycopg
import pytest

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


def _held_after_halt(server: PostgresServer) -> socket.socket:
    """``server`` halted, and its port bound and listened on by another socket (as another
    process may take it while the server is down)."""
    server.halt()
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past its TIME_WAITs
    holder.bind(("127.0.0.1", server.port))
    holder.listen()
    return holder


def test_a_restart_waits_for_its_port_to_be_free_again_and_keeps_it() -> None:
    # start_again failed at once ("could not start server") when the port was taken while
    # the server was down; its clients know it by that port, so it must come back there.
    server = PostgresServer(fsync=False)
    try:
        server.start()
        port = server.port
        with _held_after_halt(server) as holder, ThreadPoolExecutor(1) as pool:
            restarting = pool.submit(server.start_again)
            wait([restarting], timeout=1.0)  # a try or more, each refused
            assert not restarting.done(), restarting.exception()
            holder.close()
            restarting.result(timeout=120)
        assert server.port == port
        with psycopg.connect(server.url) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


def test_a_restart_whose_port_stays_taken_says_so_within_its_bound() -> None:
    server = PostgresServer(fsync=False)
    try:
        server.start()
        with _held_after_halt(server), pytest.raises(RuntimeError) as raised:
            server.start_again(port_wait=1.0)
        assert str(raised.value) == (
            f"PostgreSQL could not start again on port {server.port}: another process still "
            "held it after 1s of retries (its clients reach it there, so it cannot move); see "
            f"who holds it with `ss -ltnp 'sport = :{server.port}'` and stop that process"
        )
        server.start_again()  # freed: it starts there
        with psycopg.connect(server.url) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
