"""What the Ray cluster tells the team's process (Ray prints it, whatever
``log_to_driver`` says: a replica that died, "The autoscaler failed ..." as a head
goes away) goes to stderr: stdout may be machine-read (``regiment run --events
jsonl`` lost a line of its JSON to it when a cluster went away)."""

from __future__ import annotations

import time
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy.workers._ray_join import join_ray

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(120)]


async def test_rays_messages_to_the_driver_go_to_stderr(
    ray_session: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    from ray._private.utils import publish_error_to_driver

    await join_ray(ray_session, None)  # the team's join: the session's Ray is joined already
    message = f"a message for the driver {time.time_ns()}"
    gcs = ray_session._private.worker.global_worker.gcs_client
    publish_error_to_driver("regiment_test", message, gcs)
    out = err = ""
    deadline = time.monotonic() + 60
    while message not in out + err and time.monotonic() < deadline:
        await anyio.sleep(0.1)  # Ray's listener thread prints it
        captured = capsys.readouterr()
        out, err = out + captured.out, err + captured.err
    assert message in err
    assert message not in out
