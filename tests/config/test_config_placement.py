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
        _with_placement(
            'kind = "ray"\nreplicas = 3\nnum_cpus = 0.5\nresources = {db = 1.0}\n'
            "start_timeout = 300"
        ),
        format="toml",
    )
    team = build_team(config, model="scripted", source=str(REFUND))
    comms = team.workers[1]
    assert isinstance(comms, Worker)
    assert isinstance(comms.placement, Ray)
    ray = comms.placement
    assert (ray.replicas, ray.num_cpus, dict(ray.resources)) == (3, 0.5, {"db": 1.0})
    assert ray.start_timeout == 300
    assert callable(ray.build)
    rebuilt = pickle.loads(pickle.dumps(ray.build))()  # what a replica does
    assert isinstance(rebuilt, Worker)
    assert rebuilt.placement is None
    assert (rebuilt.name, rebuilt.capabilities) == ("comms", comms.capabilities)
    assert rebuilt.description == comms.description


def test_a_ray_placed_worker_keeps_its_mcp_servers() -> None:
    """They were dropped in the team's process (the replica never started them, and the
    planner never heard of their tools); its replicas start them now."""
    mcp = '[[workers.mcp]]\ncommand = ["my-server"]\nprefix = "m_"\n\n'
    text = _with_placement('kind = "ray"').replace(
        "[workers.placement]", mcp + "[workers.placement]"
    )
    team = build_team(parse_config(text, format="toml"), model="scripted", source=str(REFUND))
    comms = team.workers[1]
    assert isinstance(comms, Worker)
    assert isinstance(comms.placement, Ray)
    (server,) = comms.mcp_servers
    assert (server.name, server.prefix) == ("my-server", "m_")


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
        ('kind = "ray"\nstart_timeout = -1', r"workers\[1\]\.placement: Ray\(start_timeout=-1"),
        ('kind = "ray"\nreplica = 2', r"replica"),
        # a negative custom resource or a NaN amount got as far as Ray at Team.start()
        ('kind = "ray"\nresources = {db_zone = -1}', r"Ray\(resources\['db_zone'\]=-1(\.0)?\)"),
        ('kind = "ray"\nnum_cpus = nan', r"Ray\(num_cpus=nan\): give a finite number"),
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


def _both_placed(billing: str, comms: str) -> str:
    """The refund file with a ``[workers.placement]`` table under each worker."""
    text = _with_placement(comms)
    anchor = '    "examples.refund.tools:flag_exception",\n]\n'
    assert anchor in text
    return text.replace(anchor, f"{anchor}\n[workers.placement]\n{billing}\n")


def test_workers_naming_one_pool_share_its_settings() -> None:
    block = 'kind = "ray"\npool = "cpu"\nreplicas = 2\nnum_cpus = 0.5'
    config = parse_config(_both_placed(block, block), format="toml")
    team = build_team(config, model="scripted", source=str(REFUND))
    placements = [w.placement for w in team.workers if isinstance(w, Worker)]
    assert [(p.pool, p.replicas, p.num_cpus) for p in placements if p is not None] == [
        ("cpu", 2, 0.5),
        ("cpu", 2, 0.5),
    ]


def test_a_pool_whose_workers_disagree_is_an_error_naming_what_differs() -> None:
    billing = 'kind = "ray"\npool = "cpu"\nreplicas = 2\nnum_cpus = 0.5'
    comms = 'kind = "ray"\npool = "cpu"\nreplicas = 1\nnum_cpus = 0.5\nresources = {db = 1.0}'
    config = parse_config(_both_placed(billing, comms), format="toml", source="team.toml")
    with pytest.raises(ConfigError) as caught:
        build_team(config, model="scripted", source="team.toml")
    message = str(caught.value)
    assert message.startswith("team.toml: ")
    assert "workers 'billing' and 'comms' share the Ray pool 'cpu'" in message
    assert "replicas (2 and 1)" in message
    assert "resources ({} and {'db': 1.0})" in message
    assert "num_cpus" not in message  # they agree on it
    assert "different pools" in message


def test_a_pool_in_code_is_checked_when_the_team_is_made() -> None:
    from regiment import Planner, ScriptedModel, Team

    model = ScriptedModel([])

    def worker(name: str, placement: Ray) -> Worker:
        return Worker(name=name, description=name, model=model, placement=placement)

    same = [worker("a", Ray(pool="gpu", num_gpus=1)), worker("b", Ray(pool="gpu", num_gpus=1))]
    Team(name="t", planner=Planner(model=model), workers=same)  # agreeing: fine
    apart = [worker("a", Ray(pool="gpu", num_gpus=1)), worker("b", Ray(pool="gpu"))]
    with pytest.raises(
        ConfigError, match=r"team 't': workers 'a' and 'b' .*num_gpus \(1 and 0\.0\)"
    ):
        Team(name="t", planner=Planner(model=model), workers=apart)
    own = [worker("a", Ray(num_gpus=1)), worker("b", Ray())]  # no pool: replicas of their own
    Team(name="t", planner=Planner(model=model), workers=own)
    with pytest.raises(ConfigError, match=r"Ray\(pool=''\): give the pool a non-empty name"):
        Ray(pool="")


def test_workers_ray_puts_the_workers_without_a_placement_in_one_pool() -> None:
    own = 'kind = "local"\nreplicas = 2'  # comms has a placement table of its own
    config = place_on_ray(parse_config(_with_placement(own), format="toml"))
    team = build_team(config, model="scripted", source=str(REFUND))
    billing, comms = (w.placement for w in team.workers if isinstance(w, Worker))
    assert billing is not None
    assert comms is not None
    assert (billing.pool, billing.replicas) == ("workers", 1)
    assert (comms.pool, comms.replicas) == (None, 2)  # kept its own replicas
    shared = place_on_ray(parse_config(REFUND.read_text(), format="toml"))
    pools = {
        w.placement.pool
        for w in build_team(shared, model="scripted").workers
        if isinstance(w, Worker) and w.placement is not None
    }
    assert pools == {"workers"}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"resources": {"db_zone": -1}}, r"Ray\(resources\['db_zone'\]=-1(\.0)?\)"),
        ({"resources": {"db_zone": float("inf")}}, r"resources\['db_zone'\]=inf"),
        ({"num_gpus": float("nan")}, r"Ray\(num_gpus=nan\)"),
        ({"num_cpus": True}, r"Ray\(num_cpus=True\)"),
        ({"num_cpus": -1}, r"resources cannot be negative"),
        ({"resources": {"": 1}}, r"name each resource"),
        ({"resources": ["db_zone"]}, r"give a mapping"),
    ],
)
def test_a_ray_amount_that_is_no_amount_is_refused(given: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Ray(**given)  # type: ignore[arg-type]


def test_ray_amounts_of_zero_and_more_are_taken() -> None:
    placed = Ray(num_cpus=0, num_gpus=0.5, resources={"db_zone": 1})
    assert (placed.num_cpus, placed.num_gpus, dict(placed.resources)) == (0, 0.5, {"db_zone": 1})
