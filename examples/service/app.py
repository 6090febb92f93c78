"""A web service with the team mounted under ``/agents``.

``regiment.serve.create_app`` gives the routes (runs, live events, cancel);
this service adds its own and runs the team's lifespan, which Starlette does
not run for a mounted app. With FastAPI it reads the same::

    agents = create_app(team)
    api = FastAPI(lifespan=agents.router.lifespan_context)
    api.mount("/agents", agents)

Without Python glue, ``regiment serve team.toml`` serves a team file the same way.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from regiment.hierarchy import Team
from regiment.serve import create_app

__all__ = ("build_app",)


def build_app(team: Team, *, token: str | None = None) -> Starlette:
    """The service: ``GET /`` says what it is; the team's routes live under ``/agents``."""
    agents = create_app(team, token=token)

    async def home(request: Request) -> JSONResponse:
        return JSONResponse(
            {"service": "orders", "agents": str(request.url_for("agents", path="/"))}
        )

    return Starlette(
        routes=[Route("/", home), Mount("/agents", app=agents, name="agents")],
        lifespan=agents.router.lifespan_context,
    )
