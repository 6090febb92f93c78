"""A token no request can send is refused where it is given: ``create_app(token=...)``,
``regiment serve --token`` and ``$REGIMENT_TOKEN``. One read from a file kept its newline
(an HTTP header cannot carry it, and servers strip what surrounds a header's value), or
held a non-ASCII letter (a header's bytes are read as latin-1): every request was then
refused 401, and nothing said why. A token with inner spaces still works, under uvicorn."""

from __future__ import annotations

import io
import sys

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.cli import run_async
from regiment.errors import ConfigError
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, shop_team

from .cli_serving import REFUND

pytestmark = pytest.mark.anyio

UNSENDABLE = [
    ("s3cret\n", "has whitespace around it ('s3cret\\n')"),
    (" s3cret", "has whitespace around it (' s3cret')"),
    ("s3\tcret", "holds '\\t': a token travels in an HTTP header"),
    ("p\u00e4ss", "holds '\u00e4': a token travels in an HTTP header"),
]


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


@pytest.mark.parametrize(("token", "said"), UNSENDABLE)
def test_create_app_refuses_a_token_no_request_can_send(token: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        create_app(shop_team(Shop()), token=token)
    assert str(refused.value).startswith(f"the token {said}"), refused.value


@pytest.mark.parametrize(("token", "said"), UNSENDABLE[:2])
async def test_serve_refuses_one_from_the_flag_or_the_environment(token: str, said: str) -> None:
    for argv, environ, given in (
        (["--token", token], {}, "--token"),
        ([], {"REGIMENT_TOKEN": token}, "$REGIMENT_TOKEN"),
    ):
        err = io.StringIO()
        command = ["serve", REFUND, "--model", "scripted", "--port", "0", *argv]
        with anyio.fail_after(30):  # (a hang guard: taken, it served on)
            code = await run_async(command, stdout=io.StringIO(), stderr=err, environ=environ)
        assert code == 2, err.getvalue()
        last = err.getvalue().splitlines()[-1]
        assert last.startswith(f"regiment: error: {given} {said}"), last
        assert ".read_text().strip()" in last


async def test_a_token_with_inner_spaces_is_sent_and_taken() -> None:
    app = create_app(shop_team(Shop()), token="two words")
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        taken = await c.get("/runs", headers={"Authorization": "Bearer two words"})
        assert taken.status_code == 200, taken.text
        refused = await c.get("/runs", headers={"Authorization": "Bearer two"})
        assert refused.status_code == 401, refused.text


async def test_a_401_names_its_scheme_and_spaces_after_the_scheme_are_taken() -> None:
    # RFC 9110 (15.5.2): a 401 carries WWW-Authenticate; its credentials come after
    # one space or more (a header typed by hand with two).
    app = create_app(shop_team(Shop()), token="s3cret")
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic eDp5"}):
            refused = await c.get("/runs", headers=headers)
            assert refused.status_code == 401, refused.text
            assert refused.headers["www-authenticate"] == 'Bearer realm="regiment"'
        ticketless = await c.get("/runs/run-1/events?ticket=nope")
        assert ticketless.status_code == 401, ticketless.text
        assert ticketless.headers["www-authenticate"] == 'Bearer realm="regiment"'
        taken = await c.get("/runs", headers={"Authorization": "Bearer   s3cret"})
        assert taken.status_code == 200, taken.text
