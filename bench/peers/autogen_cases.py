# mypy: ignore-errors
"""AutoGen core's side of rows 1 and 4: ``send_message`` to a ``RoutedAgent``.

Row 1: sequential sends to an echo agent (µs per round trip). Row 4: ``steps``
concurrent sends to ``steps`` worker agents whose handler is a 50 ms model call.
"""

import asyncio
import time
from dataclasses import dataclass

from autogen_core import (
    AgentId,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    message_handler,
)
from bench_util import OVERLAP_DELAY, OVERLAP_REPEATS, REPEATS, median

ASKS = 5_000


@dataclass
class Ping:
    n: int


@dataclass
class Step:
    id: str


class Echo(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("echoes")

    @message_handler
    async def on_ping(self, message: Ping, ctx: MessageContext) -> Ping:
        return message


class StepWorker(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("does a step with a 50 ms model call")

    @message_handler
    async def on_step(self, message: Step, ctx: MessageContext) -> str:
        await asyncio.sleep(OVERLAP_DELAY)
        return f"done {message.id}"


def roundtrip():
    async def main() -> float:
        runtime = SingleThreadedAgentRuntime()
        await Echo.register(runtime, "echo", Echo)
        runtime.start()
        echo = AgentId("echo", "default")

        async def measure(n: int) -> float:
            start = time.perf_counter()
            for i in range(n):
                await runtime.send_message(Ping(i), echo)
            return (time.perf_counter() - start) / n

        await measure(ASKS // 10)
        result = median([await measure(ASKS) for _ in range(REPEATS)])
        await runtime.stop()
        return result

    return {"us": asyncio.run(main()) * 1e6}


def overlap(steps: int):
    async def main() -> list[float]:
        runtime = SingleThreadedAgentRuntime()
        await StepWorker.register(runtime, "worker", StepWorker)
        runtime.start()
        agents = [AgentId("worker", f"w{i}") for i in range(steps)]

        async def once() -> float:
            start = time.perf_counter()
            replies = await asyncio.gather(
                *(runtime.send_message(Step(f"s{i}"), a) for i, a in enumerate(agents))
            )
            assert len(replies) == steps
            return time.perf_counter() - start

        await once()
        samples = [await once() for _ in range(OVERLAP_REPEATS)]
        await runtime.stop()
        return samples

    return {"wall_ms": median(asyncio.run(main())) * 1e3, "ideal_ms": OVERLAP_DELAY * 1e3}


CASES = {
    "roundtrip": roundtrip,
    "overlap.10": lambda: overlap(10),
    "overlap.100": lambda: overlap(100),
}
