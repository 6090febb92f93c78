"""Ask round trip: a regiment actor vs. raw anyio streams vs. raw asyncio.Queue.

Run with ``.venv/bin/python bench/actors_roundtrip.py`` (``--profile`` adds a
cProfile of the regiment ask loop). Each figure is the median over REPEATS runs
of ASKS sequential round trips, in microseconds per round trip.
``--instructions`` counts a regiment ask in CPU instructions under callgrind
instead (exact, whatever the machine's load), on asyncio and trio, and also
what spawning an actor and stopping it costs (every run spawns and stops its
planner actor: this is that part of a run's cost, for an actor with no
``on_start`` or ``on_stop``), and the same for a dormant actor
(``ctx.spawn_dormant``, spawned and stopped by a parent's handler with no task
of its own ever started), as a run's planner is now.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from regiment.actors import Actor, open_actor_system

ASKS = 5_000
REPEATS = 7
MAILBOX = 64


class Echo(Actor[int, int]):
    """Replies with the number it was asked."""

    async def receive(self, message: int) -> int:
        return message


async def _median_us(run_once: Callable[[int], Awaitable[float]]) -> float:
    await run_once(ASKS // 10)  # warm-up
    samples = [await run_once(ASKS) for _ in range(REPEATS)]
    return statistics.median(samples) / ASKS * 1e6


async def regiment_ask() -> float:
    """Median µs per ``await ref.ask(n)`` on an echo actor."""
    async with open_actor_system() as system:
        ref = await system.spawn(Echo, name="echo", capacity=MAILBOX)

        async def run_once(n: int) -> float:
            start = time.perf_counter()
            for i in range(n):
                await ref.ask(i)
            return time.perf_counter() - start

        return await _median_us(run_once)


async def _anyio_responder(
    requests: MemoryObjectReceiveStream[int], replies: MemoryObjectSendStream[int]
) -> None:
    async for request in requests:
        await replies.send(request)


async def anyio_pair() -> float:
    """Median µs per request/reply over two raw anyio memory object streams."""
    req_send, req_recv = anyio.create_memory_object_stream[int](MAILBOX)
    rep_send, rep_recv = anyio.create_memory_object_stream[int](1)
    with req_send, req_recv, rep_send, rep_recv:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_anyio_responder, req_recv, rep_send)

            async def run_once(n: int) -> float:
                start = time.perf_counter()
                for i in range(n):
                    await req_send.send(i)
                    await rep_recv.receive()
                return time.perf_counter() - start

            result = await _median_us(run_once)
            tg.cancel_scope.cancel()
    return result


async def _queue_responder(requests: asyncio.Queue[int], replies: asyncio.Queue[int]) -> None:
    while True:
        await replies.put(await requests.get())


async def asyncio_queue_pair() -> float:
    """Median µs per request/reply over two raw asyncio.Queues."""
    requests: asyncio.Queue[int] = asyncio.Queue(MAILBOX)
    replies: asyncio.Queue[int] = asyncio.Queue(1)
    responder = asyncio.ensure_future(_queue_responder(requests, replies))

    async def run_once(n: int) -> float:
        start = time.perf_counter()
        for i in range(n):
            await requests.put(i)
            await replies.get()
        return time.perf_counter() - start

    try:
        return await _median_us(run_once)
    finally:
        responder.cancel()
        await asyncio.gather(responder, return_exceptions=True)


async def regiment_asks(asks: int) -> None:
    """``asks`` sequential asks on an echo actor, after a warm-up (for callgrind)."""
    async with open_actor_system() as system:
        ref = await system.spawn(Echo, name="echo", capacity=MAILBOX)
        for i in range(100 + asks):
            await ref.ask(i)


async def regiment_spawns(spawns: int) -> None:
    """``spawns`` actors spawned and stopped one after another, after a warm-up."""
    async with open_actor_system() as system:
        for _ in range(20 + spawns):
            ref = await system.spawn(Echo, name="echo", capacity=MAILBOX)
            await ref.stop()


class Spawner(Actor[int, None]):
    """Spawns that many dormant echo actors and stops each, one after another."""

    async def receive(self, message: int) -> None:
        for _ in range(message):
            ref = self.ctx.spawn_dormant(Echo, name="echo", capacity=MAILBOX)
            await ref.stop()


async def regiment_dormant_spawns(spawns: int) -> None:
    """``spawns`` dormant actors spawned and stopped, after a warm-up."""
    async with open_actor_system() as system:
        parent = await system.spawn(Spawner, name="spawner")
        await parent.ask(20)
        await parent.ask(spawns)


def _instructions() -> None:
    from callgrind_count import instructions_per_unit

    print("regiment actor ask, callgrind (instructions per round trip)")
    for backend in ("asyncio", "trio"):
        per_ask = instructions_per_unit([__file__, "--child", backend], 1_000, 6_000)
        print(f"  {backend:8s} {per_ask / 1000:7.1f} k")
    print("regiment actor spawned and stopped, callgrind (instructions each)")
    for backend in ("asyncio", "trio"):
        per_spawn = instructions_per_unit([__file__, "--spawns", backend], 10, 60)
        print(f"  {backend:8s} {per_spawn / 1000:7.1f} k")
    print("regiment dormant actor spawned and stopped, callgrind (instructions each)")
    for backend in ("asyncio", "trio"):
        per_spawn = instructions_per_unit([__file__, "--dormant", backend], 10, 60)
        print(f"  {backend:8s} {per_spawn / 1000:7.1f} k")


def profile_regiment() -> None:
    """Print where a regiment ask spends its time (cProfile, asyncio backend)."""
    profiler = cProfile.Profile()
    profiler.enable()
    anyio.run(regiment_ask, backend="asyncio")
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


def main() -> None:
    """Run the three round trips on asyncio (and the anyio ones on trio) and print ratios."""
    if sys.argv[1:2] == ["--child"]:
        anyio.run(regiment_asks, int(sys.argv[3]), backend=sys.argv[2])
        return
    if sys.argv[1:2] == ["--spawns"]:
        anyio.run(regiment_spawns, int(sys.argv[3]), backend=sys.argv[2])
        return
    if sys.argv[1:2] == ["--dormant"]:
        anyio.run(regiment_dormant_spawns, int(sys.argv[3]), backend=sys.argv[2])
        return
    if "--instructions" in sys.argv:
        _instructions()
        return
    if "--profile" in sys.argv:
        profile_regiment()
        return
    regiment_us = anyio.run(regiment_ask, backend="asyncio")
    anyio_us = anyio.run(anyio_pair, backend="asyncio")
    queue_us = asyncio.run(asyncio_queue_pair())
    regiment_trio_us = anyio.run(regiment_ask, backend="trio")
    anyio_trio_us = anyio.run(anyio_pair, backend="trio")
    print(f"ask round trip, median of {REPEATS} x {ASKS} sequential asks (µs per round trip)")
    print(f"  asyncio  regiment actor ask        {regiment_us:7.2f}")
    print(f"  asyncio  raw anyio stream pair     {anyio_us:7.2f}")
    print(f"  asyncio  raw asyncio.Queue pair    {queue_us:7.2f}")
    print(f"  trio     regiment actor ask        {regiment_trio_us:7.2f}")
    print(f"  trio     raw anyio stream pair     {anyio_trio_us:7.2f}")
    print(f"  regiment / anyio pair   (asyncio)  {regiment_us / anyio_us:7.2f}x")
    print(f"  regiment / asyncio.Queue (asyncio) {regiment_us / queue_us:7.2f}x")
    print(f"  regiment / anyio pair   (trio)     {regiment_trio_us / anyio_trio_us:7.2f}x")


if __name__ == "__main__":
    main()
