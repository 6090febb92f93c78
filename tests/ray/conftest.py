"""One local Ray for the whole test session, started and stopped by this fixture
(never ``ray stop``: that would stop every Ray on the machine)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Ray is asyncio-only; the trio refusal test asks for trio itself


@pytest.fixture(scope="session")
def ray_session() -> Iterator[ModuleType]:
    import ray

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(
        address="local",  # a Ray of the tests' own, never one another program left running
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def probe(ray_session: ModuleType, request: pytest.FixtureRequest) -> Iterator[tuple[str, object]]:
    from ._ray_team import Probe

    name = f"probe-{os.getpid()}-{request.node.name}"
    handle = ray_session.remote(Probe).options(name=name).remote()
    yield name, handle
    ray_session.kill(handle)
