"""The planner's turns: a reply handled in the task that has it, a message sent
to an idle planner handled in the sender's task, and still one handler at a
time, in order, whatever gets cancelled or fails meanwhile."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Sequence

import anyio
import pytest

from regiment.actors import ActorRef, ActorSystem, RestartPolicy, open_actor_system
from regiment.errors import ActorFailed, RunError
from regiment.hierarchy import Planner, Prompts, Team, Worker
from regiment.hierarchy.run._messages import CancelRun, PlannerMessage
from regiment.hierarchy.run._turns import TakesTurns
from regiment.models import ScriptedModel

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

_WHOSE: contextvars.ContextVar[str] = contextvars.ContextVar("whose", default="nobody")


class Turns(TakesTurns):
    """Logs each message's start and end; a message named in ``gates`` waits on its
    event mid-handler, ``boom`` raises (and the failure is logged before the actor
    fails), and ``now ...`` may be handled at once."""

    def __init__(self, log: list[str], gates: dict[str, anyio.Event]) -> None:
        self.log = log
        self.gates = gates

    async def on_start(self) -> None:
        _WHOSE.set("the actor's")
        await super().on_start()

    async def _handle(self, message: PlannerMessage) -> None:
        assert isinstance(message, CancelRun)
        name = message.reason
        self.log.append(f"start {name}")
        if name in self.gates:
            await self.gates[name].wait()
        if name == "boom":
            raise ValueError("the handler broke")
        self.log.append(f"end {name}")

    def _failed(self, message: PlannerMessage, exc: Exception) -> None:
        assert isinstance(message, CancelRun)
        self.log.append(f"failed: {message.reason}: {exc}")

    def _handle_now(self, message: PlannerMessage) -> bool:
        assert isinstance(message, CancelRun)
        if not message.reason.startswith("now"):
            return False
        self.log.append(f"now: {message.reason} in {_WHOSE.get()} context")
        if message.reason == "now boom":
            raise ValueError("the quick handler broke")
        return True


async def _spawn(
    system: ActorSystem, log: list[str], gates: dict[str, anyio.Event]
) -> tuple[Turns, ActorRef[PlannerMessage, None]]:
    made: list[Turns] = []

    def factory() -> Turns:
        made.append(Turns(log, gates))
        return made[-1]

    ref = await system.spawn(factory, name="planner", restart=RestartPolicy(max_restarts=0))
    return made[0], ref


def _paired(log: Sequence[str]) -> bool:
    """Every handler ended before the next one started (no two ran at once)."""
    return all(
        log[i].startswith("start") and log[i + 1] == "end" + log[i][5:]
        for i in range(0, len(log) - 1, 2)
    )


async def test_a_reply_waits_for_the_running_handler_and_goes_before_later_mail() -> None:
    log: list[str] = []
    gates = {"a": anyio.Event()}
    async with open_actor_system() as system:
        actor, ref = await _spawn(system, log, gates)
        await ref.send(CancelRun("a"))  # handled by the actor's task; it waits mid-handler
        await anyio.wait_all_tasks_blocked()
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.take_turn, CancelRun("reply"))  # a call runner's reply
            await anyio.wait_all_tasks_blocked()
            await ref.send(CancelRun("b"))  # mail that came after the reply
            await anyio.wait_all_tasks_blocked()
            assert log == ["start a"]  # the reply waits its turn
            gates["a"].set()
        await ref.stop()
    assert log == ["start a", "end a", "start reply", "end reply", "start b", "end b"]


async def test_mail_waits_for_a_reply_being_handled_in_its_own_task() -> None:
    log: list[str] = []
    gates = {"reply": anyio.Event()}
    async with open_actor_system() as system:
        actor, ref = await _spawn(system, log, gates)
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.take_turn, CancelRun("reply"))
            await anyio.wait_all_tasks_blocked()
            for name in ("b", "c"):
                await ref.send(CancelRun(name))
            await anyio.wait_all_tasks_blocked()
            assert log == ["start reply"]
            gates["reply"].set()
        await ref.stop()
    assert log == ["start reply", "end reply", "start b", "end b", "start c", "end c"]
    assert _paired(log)


async def test_a_turn_cancelled_while_it_waits_is_given_up_and_mail_goes_on() -> None:
    log: list[str] = []
    gates = {"a": anyio.Event()}
    async with open_actor_system() as system:
        actor, ref = await _spawn(system, log, gates)
        await ref.send(CancelRun("a"))
        await anyio.wait_all_tasks_blocked()
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.take_turn, CancelRun("reply"))
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()  # the waiting reply is cancelled
        gates["a"].set()
        await ref.send(CancelRun("b"))
        with anyio.fail_after(5):
            await ref.stop()
    assert log == ["start a", "end a", "start b", "end b"]


async def test_a_turn_cancelled_once_handed_to_it_passes_the_turn_on() -> None:
    log: list[str] = []
    gates = {"a": anyio.Event()}
    waiter = anyio.CancelScope()

    async def reply(actor: Turns) -> None:
        with waiter:
            await actor.take_turn(CancelRun("reply"))

    async with open_actor_system() as system:
        actor, ref = await _spawn(system, log, gates)
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.take_turn, CancelRun("a"))  # holds the turn
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(reply, actor)  # waits for it
            await anyio.wait_all_tasks_blocked()
            gates["a"].set()  # "a" ends and hands the turn to the reply ...
            await anyio.lowlevel.checkpoint()
            waiter.cancel()  # ... which is cancelled, maybe before it ran
        await ref.send(CancelRun("b"))
        with anyio.fail_after(5):
            await ref.stop()
    assert log[:2] == ["start a", "end a"]
    assert log[-2:] == ["start b", "end b"]
    assert _paired(log)


async def test_a_handler_cancelled_mid_turn_releases_the_turn() -> None:
    log: list[str] = []
    gates = {"reply": anyio.Event()}
    async with open_actor_system() as system:
        actor, ref = await _spawn(system, log, gates)
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(actor.take_turn, CancelRun("reply"))
                await anyio.wait_all_tasks_blocked()
                scope.cancel()
        await ref.send(CancelRun("b"))
        with anyio.fail_after(5):
            await ref.stop()
    assert log == ["start reply", "start b", "end b"]


async def test_a_message_sent_to_an_idle_actor_is_handled_in_the_actors_context() -> None:
    log: list[str] = []
    async with open_actor_system() as system:
        _, ref = await _spawn(system, log, {})
        _WHOSE.set("the sender's")
        await ref.send(CancelRun("now go"))
        assert log == ["now: now go in the actor's context"]  # done before send returned
        await ref.send(CancelRun("later"))  # not one it takes at once: queued as usual
        await ref.stop()
    assert log[1:] == ["start later", "end later"]


async def test_a_failing_handler_in_the_reply_task_fails_the_actor() -> None:
    log: list[str] = []

    async def scenario() -> None:
        async with open_actor_system() as system:
            actor, _ = await _spawn(system, log, {})
            await actor.take_turn(CancelRun("boom"))

    with pytest.raises(ValueError, match="the handler broke"):
        await scenario()
    assert log == ["start boom", "failed: boom: the handler broke"]


async def test_a_failing_handler_in_a_helper_task_fails_the_actor_and_is_reported() -> None:
    log: list[str] = []

    async def scenario() -> None:
        async with open_actor_system() as system:
            actor, _ = await _spawn(system, log, {})
            actor.ctx.start_soon(actor.take_turn, CancelRun("boom"))  # as the call runner does
            await anyio.sleep_forever()

    with pytest.raises(ActorFailed, match="allows 0 restarts") as caught:
        await scenario()
    assert isinstance(caught.value.__cause__, ValueError)
    assert log == ["start boom", "failed: boom: the handler broke"]


async def test_a_failing_quick_handler_fails_the_actor_not_the_sender() -> None:
    log: list[str] = []
    sent: list[str] = []

    async def scenario() -> None:
        async with open_actor_system() as system:
            _, ref = await _spawn(system, log, {})
            await ref.send(CancelRun("now boom"))
            sent.append("the send returned")
            await anyio.sleep_forever()

    with pytest.raises(ActorFailed, match="allows 0 restarts") as caught:
        await scenario()
    assert sent == ["the send returned"]
    assert isinstance(caught.value.__cause__, ValueError)
    assert "quick handler broke" in str(caught.value.__cause__)
    assert log == [
        "now: now boom in the actor's context",
        "failed: now boom: the quick handler broke",
    ]


async def test_a_bug_handling_a_model_reply_fails_the_run_with_its_cause() -> None:
    class BrokenPrompts(Prompts):
        def plan_problems(self, problems: Iterable[str]) -> str:
            raise ValueError("re-prompt template is broken")

    # The first plan names no steps: its re-prompt is built while handling the reply.
    brain = Brain(["{}", plan_json({"description": "x"})])
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model, prompts=BrokenPrompts()),
        workers=[Worker(name="w", description="w", model=model)],
    )
    with pytest.raises(RunError) as info:
        await team.run("goal")
    assert str(info.value).startswith(  # the hook that raised is named (test_prompt_hooks)
        "the Prompts hook BrokenPrompts.plan_problems raised ValueError: re-prompt template "
        "is broken; "
    )
    assert isinstance(info.value.__cause__, ValueError)
