"""Two actors rally a ball while a scorer counts; then everything stops cleanly.

Run with ``.venv/bin/python examples/ping_pong.py [asyncio|trio]``.
"""

from __future__ import annotations

import argparse
from typing import assert_never

import anyio
import msgspec

from regiment import run_main
from regiment.actors import Actor, ActorRef, open_actor_system
from regiment.errors import ActorStopped

RALLY = 10


class Hit(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A player hit the ball."""

    player: str


class Tally(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """Ask for the score so far."""


ScorerMessage = Hit | Tally
Score = dict[str, int]


class Scorer(Actor[ScorerMessage, Score]):
    """Counts hits per player; every message is answered with the score so far."""

    def __init__(self) -> None:
        self.score: Score = {}

    async def receive(self, message: ScorerMessage) -> Score:
        match message:
            case Hit(player=player):
                self.score[player] = self.score.get(player, 0) + 1
            case Tally():
                pass
            case _:
                assert_never(message)
        return dict(self.score)


class Ball(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """The ball, with the number of hits so far and who to send it back to."""

    hits: int
    back_to: ActorRef[PlayerMessage, None]


class Serve(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """Start a rally against ``opponent``."""

    opponent: ActorRef[PlayerMessage, None]


PlayerMessage = Serve | Ball


class Player(Actor[PlayerMessage, None]):
    """Returns the ball until the rally is over, reporting each hit to the scorer."""

    def __init__(self, scorer: ActorRef[ScorerMessage, Score], rally_over: anyio.Event) -> None:
        self.scorer = scorer
        self.rally_over = rally_over

    async def receive(self, message: PlayerMessage) -> None:
        match message:
            case Serve(opponent=opponent):
                await self.hit(opponent, hits=1)
            case Ball(hits=hits, back_to=back_to):
                if hits == RALLY:
                    self.rally_over.set()
                else:
                    await self.hit(back_to, hits=hits + 1)
            case _:
                assert_never(message)

    async def hit(self, to: ActorRef[PlayerMessage, None], *, hits: int) -> None:
        await self.scorer.send(Hit(player=self.ctx.name))
        await to.send(Ball(hits=hits, back_to=self.ctx.self_ref))


async def play() -> list[str]:
    """Play one rally and return what happened, line by line."""
    lines: list[str] = []
    rally_over = anyio.Event()
    async with open_actor_system() as system:
        scorer = await system.spawn(Scorer, name="scorer")
        ping = await system.spawn(lambda: Player(scorer, rally_over), name="ping")
        pong = await system.spawn(lambda: Player(scorer, rally_over), name="pong")
        await ping.send(Serve(opponent=pong))
        await rally_over.wait()
        score = await scorer.ask(Tally(), timeout=5)
        total = sum(score.values())
        lines.append(f"rally of {total} hits: ping {score['ping']}, pong {score['pong']}")
        await pong.stop()
        lines.append(f"pong stopped gracefully (alive: {pong.is_alive})")
        try:
            await pong.send(Serve(opponent=ping))
        except ActorStopped as exc:
            lines.append(f"serving to pong now fails: {exc}")
    lines.append(
        f"system closed: ping alive {ping.is_alive}, dead letters {system.dead_letter_count}"
        f" ({system.dead_letters[0].reason} message to {system.dead_letters[0].recipient!r})"
    )
    return lines


def main() -> None:
    """Play on the backend named on the command line (asyncio by default)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "backend", nargs="?", choices=("asyncio", "trio"), default="asyncio", help="anyio's backend"
    )
    backend = parser.parse_args().backend  # a bad one: usage, and exit 2
    run_main(show, backend=backend)  # anyio.run(show, ...), quiet when piped into `head`


async def show() -> None:
    for line in await play():
        print(line)


if __name__ == "__main__":
    main()
