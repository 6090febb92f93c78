"""``regiment serve --host H``: a host it cannot listen on is named as the problem, with what
to do; a port in use keeps the port's words. Each was "pick another --port" before."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from .helpers import regiment_process

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")
SERVE = ["serve", REFUND, "--model", "scripted", "--app-dir", str(ROOT), "--token", "T"]
WHAT_TO_DO = "give an address of this machine, e.g. 127.0.0.1 or 0.0.0.0"


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("bad host!!", "Name or service not known"),  # does not resolve
        ("192.0.2.1", "Cannot assign requested address"),  # TEST-NET-1: not this machine's
    ],
    ids=["unresolvable", "not-local"],
)
def test_a_host_it_cannot_listen_on_is_named_with_what_to_do(
    host: str, reason: str, tmp_path: Path
) -> None:
    done = regiment_process(*SERVE, "--host", host, "--port", "0", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == f"regiment: error: cannot listen on host {host!r}: {reason}; {WHAT_TO_DO}"
    assert "--port" not in done.stderr


def test_a_port_in_use_still_says_pick_another_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = regiment_process(*SERVE, "--host", "127.0.0.1", "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"regiment: error: could not serve on 127.0.0.1:{port} (Address already in use): "
        "pick another --port (0 takes a free one), or stop what holds it"
    )
