"""``[workers.placement]`` in team files, and ``--workers ray``: decoded into ``Ray``
placements whose build recreates the same worker (nothing here starts Ray)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from regiment.config import build_team, parse_config
from regiment.config._placement import place_on_ray
from regiment.errors import ConfigError
from regiment.hierarchy import Ray, Worker

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml"


def _with_placement(block: str) -> str:
    text = REFUND.read_text()
    anchor = 'tools = ["examples.refund.tools:email_customer"]\n'
    return text.replace(anchor, f"{anchor}\n[workers.placement]\n{block}\n")


def test_a_ray_placement_rebuilds_the_same_worker_from_the_file() -> None:
    config = parse_config(
        _with_placement('kind = "ray"\nreplicas = 3\nnum_cpus = 0.5\nresources = {db = 1.0}'),
        format="toml",
    )
    team = build_team(config, model="scripted", source=str(REFUND))
    comms = team.workers[1]
    assert isinstance(comms, Worker)
    assert isinstance(comms.placement, Ray)
    ray = comms.placement
    assert (ray.replicas, ray.num_cpus, dict(ray.resources)) == (3, 0.5, {"db": 1.0})
    assert callable(ray.build)
    rebuilt = pickle.loads(pickle.dumps(ray.build))()  # what a replica does
    assert isinstance(rebuilt, Worker)
    assert rebuilt.placement is None
    assert (rebuilt.name, rebuilt.capabilities) == ("comms", comms.capabilities)
    assert rebuilt.description == comms.description


def test_workers_ray_places_every_model_backed_worker() -> None:
    config = place_on_ray(parse_config(REFUND.read_text(), format="toml"), address="10.0.0.5:6379")
    team = build_team(config, model="scripted", source=str(REFUND))
    placements = [w.placement for w in team.workers if isinstance(w, Worker)]
    assert [type(p) for p in placements] == [Ray, Ray]
    assert {p.address for p in placements if p is not None} == {"10.0.0.5:6379"}


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ('kind = "ray"\nreplicas = 0', r"workers\[1\]\.placement: Ray\(replicas=0\)"),
        ('kind = "cloud"', r"kind"),
        ('kind = "ray"\nreplica = 2', r"replica"),
    ],
)
def test_a_wrong_placement_names_the_key(block: str, message: str) -> None:
    def load() -> None:
        config = parse_config(_with_placement(block), format="toml", source="team.toml")
        build_team(config, model="scripted", source="team.toml")

    with pytest.raises(ConfigError, match=message):
        load()


def test_a_team_worker_cannot_have_a_placement(tmp_path: Path) -> None:
    (tmp_path / "inner.toml").write_text(REFUND.read_text())
    text = (
        'name = "outer"\nbrain = "examples.refund.brain:refund_brain"\nmodel = "scripted"\n'
        '[[workers]]\nname = "inner"\ndescription = "a team"\nteam = "inner.toml"\n'
        '[workers.placement]\nkind = "ray"\n'
    )
    with pytest.raises(ConfigError, match="placement"):
        parse_config(text, format="toml", source=str(tmp_path / "outer.toml"))
