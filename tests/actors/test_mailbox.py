"""Bounded mailboxes: backpressure, send_nowait, dead letters, and the Mailbox queue."""

from __future__ import annotations

import anyio
import anyio.abc
import pytest

from regiment.actors import Actor, ActorRef, DeadLetter, open_actor_system
from regiment.actors._mailbox import Mailbox
from regiment.actors._wakeup import wakeup_factory
from regiment.errors import ActorStopped, MailboxFull

pytestmark = pytest.mark.anyio


class SlowCounter(Actor[int, None]):
    """Takes ten scheduling rounds per message, while the producer takes one."""

    def __init__(self, seen: list[int], sizes: list[int]) -> None:
        self.seen = seen
        self.sizes = sizes

    async def receive(self, message: int) -> None:
        self.sizes.append(self.ctx.self_ref.mailbox_size)
        for _ in range(10):
            await anyio.lowlevel.checkpoint()
        self.seen.append(message)


class Gate(Actor[str, str]):
    """Blocks every message until the test opens the gate."""

    def __init__(self, gate: anyio.Event, handled: list[str]) -> None:
        self.gate = gate
        self.handled = handled

    async def receive(self, message: str) -> str:
        await self.gate.wait()
        self.handled.append(message)
        return message


async def test_mailbox_never_holds_more_than_capacity_under_a_fast_producer() -> None:
    seen: list[int] = []
    sizes: list[int] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: SlowCounter(seen, sizes), name="slow", capacity=4)
        for i in range(200):
            await ref.send(i)
            sizes.append(ref.mailbox_size)
        await ref.stop()
    assert seen == list(range(200))
    assert max(sizes) <= 4
    assert max(sizes) == 4  # the producer really was held back at capacity


async def test_send_nowait_raises_mailbox_full_and_queues_nothing() -> None:
    gate = anyio.Event()
    handled: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Gate(gate, handled), name="gate", capacity=2)
        ref.send_nowait("busy")  # taken by the handler, which then blocks
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("a")
        ref.send_nowait("b")
        with pytest.raises(MailboxFull, match="'gate' is full \\(2 messages\\)"):
            ref.send_nowait("c")
        assert ref.mailbox_size == 2
        gate.set()
        await ref.stop()
    assert handled == ["busy", "a", "b"]
    assert system.dead_letter_count == 0


async def test_messages_to_a_stopped_actor_become_counted_dead_letters() -> None:
    gate = anyio.Event()
    gate.set()
    letters: list[DeadLetter] = []
    async with open_actor_system(on_dead_letter=letters.append) as system:
        ref: ActorRef[str, str] = await system.spawn(lambda: Gate(gate, []), name="gone")
        await ref.stop()
        assert not ref.is_alive
        with pytest.raises(ActorStopped, match="'gone' has stopped"):
            await ref.send("one")
        with pytest.raises(ActorStopped):
            ref.send_nowait("two")
        with pytest.raises(ActorStopped):
            await ref.ask("three")
    assert system.dead_letter_count == 3
    assert [(d.recipient, d.message, d.reason) for d in system.dead_letters] == [
        ("gone", "one", "stopped"),
        ("gone", "two", "stopped"),
        ("gone", "three", "stopped"),
    ]
    assert letters == list(system.dead_letters)


async def test_dead_letters_keep_the_newest_up_to_the_limit_but_count_all() -> None:
    gate = anyio.Event()
    gate.set()
    async with open_actor_system(dead_letter_limit=2) as system:
        ref = await system.spawn(lambda: Gate(gate, []), name="gone")
        await ref.stop()
        for word in ("a", "b", "c"):
            with pytest.raises(ActorStopped):
                ref.send_nowait(word)
    assert system.dead_letter_count == 3
    assert [d.message for d in system.dead_letters] == ["b", "c"]


async def test_a_sender_waiting_on_a_full_mailbox_gets_actor_stopped_when_it_stops() -> None:
    gate = anyio.Event()
    outcome: list[str] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Gate(gate, []), name="full", capacity=1)
        ref.send_nowait("busy")
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("queued")

        async def blocked_sender() -> None:
            try:
                await ref.send("waiting")
            except ActorStopped:
                outcome.append("refused")

        async with anyio.create_task_group() as tg:
            tg.start_soon(blocked_sender)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(ref.stop)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert outcome == ["refused"]
    assert [(d.message, d.reason) for d in system.dead_letters] == [("waiting", "stopped")]


# -- the Mailbox queue itself -------------------------------------------------


def _mailbox(capacity: int) -> Mailbox[str]:
    """A mailbox on the running backend's wake-ups, as the actor system makes it."""
    return Mailbox(capacity, wakeup_factory())


class _Sender:
    """A ``put`` in its own task, recording how it ended."""

    def __init__(self, mailbox: Mailbox[str], item: str) -> None:
        self.mailbox = mailbox
        self.item = item
        self.scope = anyio.CancelScope()
        self.outcome = "waiting"

    async def __call__(self) -> None:
        with self.scope:
            try:
                await self.mailbox.put(self.item)
            except anyio.ClosedResourceError:
                self.outcome = "closed"
                return
            self.outcome = "put"
        if self.scope.cancelled_caught:
            self.outcome = "cancelled"


async def _senders_in_order(
    tg: anyio.abc.TaskGroup, mailbox: Mailbox[str], items: str
) -> list[_Sender]:
    """Start one waiting sender per item, each blocked before the next starts."""
    senders = []
    for item in items:
        sender = _Sender(mailbox, item)
        tg.start_soon(sender)
        await anyio.wait_all_tasks_blocked()
        senders.append(sender)
    return senders


async def test_items_come_out_in_the_order_they_went_in() -> None:
    mailbox = _mailbox(4)
    for item in "abc":
        mailbox.put_nowait(item)
    assert len(mailbox) == 3
    assert mailbox.get_nowait() == "a"
    mailbox.put_nowait("d")
    assert [await mailbox.get() for _ in range(3)] == ["b", "c", "d"]
    assert len(mailbox) == 0
    with pytest.raises(anyio.WouldBlock):
        mailbox.get_nowait()


async def test_put_nowait_raises_would_block_when_full_and_queues_nothing() -> None:
    mailbox = _mailbox(2)
    mailbox.put_nowait("a")
    mailbox.put_nowait("b")
    with pytest.raises(anyio.WouldBlock):
        mailbox.put_nowait("c")
    assert len(mailbox) == 2
    assert [mailbox.get_nowait(), mailbox.get_nowait()] == ["a", "b"]


async def test_put_and_put_nowait_raise_closed_resource_error_once_closed() -> None:
    mailbox = _mailbox(2)
    mailbox.close()
    assert mailbox.closed
    with pytest.raises(anyio.ClosedResourceError):
        mailbox.put_nowait("a")  # there is room: closed wins
    with pytest.raises(anyio.ClosedResourceError):
        await mailbox.put("b")
    assert len(mailbox) == 0


async def test_put_waits_while_full_and_goes_in_when_room_is_made() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    async with anyio.create_task_group() as tg:
        (sender,) = await _senders_in_order(tg, mailbox, "w")
        assert sender.outcome == "waiting"
        assert len(mailbox) == 1
        assert mailbox.get_nowait() == "first"
        await anyio.wait_all_tasks_blocked()
        assert sender.outcome == "put"
        assert len(mailbox) == 1
    assert mailbox.get_nowait() == "w"


async def test_two_waiting_senders_get_room_in_the_order_they_came() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    got = []
    async with anyio.create_task_group() as tg:
        a, b = await _senders_in_order(tg, mailbox, "ab")
        for _ in range(3):
            got.append(mailbox.get_nowait())
            await anyio.wait_all_tasks_blocked()
    assert got == ["first", "a", "b"]
    assert (a.outcome, b.outcome) == ("put", "put")


async def test_two_waiting_senders_keep_their_order_under_a_fast_receiver() -> None:
    # The receiver never lets the senders settle between items, so each wake-up
    # races the next get; repeated, because trio shuffles the order of wake-ups.
    for _ in range(20):
        mailbox = _mailbox(1)
        mailbox.put_nowait("first")
        got: list[str] = []
        async with anyio.create_task_group() as tg:
            await _senders_in_order(tg, mailbox, "ab")
            while len(got) < 3:
                item = await mailbox.get()
                if item is not None:
                    got.append(item)
        assert got == ["first", "a", "b"]


async def test_a_woken_sender_that_is_cancelled_passes_the_room_to_the_next() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    async with anyio.create_task_group() as tg:
        a, b, c = await _senders_in_order(tg, mailbox, "abc")
        # Cancelled, then given the room before it runs again: it takes its
        # place off the waiting line but will not use the room.
        a.scope.cancel()
        assert mailbox.get_nowait() == "first"
        await anyio.wait_all_tasks_blocked()
        assert (a.outcome, b.outcome, c.outcome) == ("cancelled", "put", "waiting")
        assert mailbox.get_nowait() == "b"
        await anyio.wait_all_tasks_blocked()
        assert c.outcome == "put"
    assert mailbox.get_nowait() == "c"
    assert len(mailbox) == 0


async def test_a_waiting_sender_cancelled_before_its_turn_just_leaves_the_line() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    async with anyio.create_task_group() as tg:
        a, b = await _senders_in_order(tg, mailbox, "ab")
        a.scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert (a.outcome, b.outcome) == ("cancelled", "waiting")
        assert mailbox.get_nowait() == "first"
        await anyio.wait_all_tasks_blocked()
        assert b.outcome == "put"
    assert mailbox.get_nowait() == "b"


async def test_close_refuses_waiting_senders_and_the_receiver_drains_then_ends() -> None:
    mailbox = _mailbox(2)
    mailbox.put_nowait("a")
    mailbox.put_nowait("b")
    async with anyio.create_task_group() as tg:
        senders = await _senders_in_order(tg, mailbox, "xy")
        mailbox.close()
        await anyio.wait_all_tasks_blocked()
        assert [s.outcome for s in senders] == ["closed", "closed"]
    assert await mailbox.get() == "a"
    assert mailbox.get_nowait() == "b"
    with pytest.raises(anyio.EndOfStream):
        await mailbox.get()
    with pytest.raises(anyio.EndOfStream):
        mailbox.get_nowait()


async def test_close_ends_a_receiver_waiting_on_an_empty_mailbox() -> None:
    mailbox = _mailbox(1)
    outcome: list[str] = []

    async def receive() -> None:
        with pytest.raises(anyio.EndOfStream):
            await mailbox.get()
        outcome.append("ended")

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.wait_all_tasks_blocked()
        mailbox.close()
    assert outcome == ["ended"]


async def test_wake_makes_a_waiting_get_return_none_without_an_item() -> None:
    mailbox = _mailbox(1)
    got: list[str | None] = []

    async def receive() -> None:
        got.append(await mailbox.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.wait_all_tasks_blocked()
        mailbox.wake()
    assert got == [None]
    assert len(mailbox) == 0
    mailbox.wake()  # nobody waits: remembered, but a queued item still comes first
    mailbox.put_nowait("a")
    assert await mailbox.get() == "a"


async def test_a_put_wakes_a_waiting_get_with_the_item() -> None:
    mailbox = _mailbox(1)
    got: list[str | None] = []

    async def receive() -> None:
        got.append(await mailbox.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.wait_all_tasks_blocked()
        mailbox.put_nowait("a")
    assert got == ["a"]


async def test_get_on_a_non_empty_mailbox_returns_without_yielding() -> None:
    mailbox = _mailbox(2)
    mailbox.put_nowait("a")
    with anyio.CancelScope() as scope:
        scope.cancel()
        # Any checkpoint inside get() would raise the pending cancellation here.
        assert await mailbox.get() == "a"
    assert not scope.cancelled_caught


# -- through the actor API -----------------------------------------------------


class Stepper(Actor[str, None]):
    """Handles one message per permit the test releases."""

    def __init__(self, permits: anyio.Semaphore, handled: list[str]) -> None:
        self.permits = permits
        self.handled = handled

    async def receive(self, message: str) -> None:
        await self.permits.acquire()
        self.handled.append(message)


async def _send_each_blocked(ref: ActorRef[str, None], tg: anyio.abc.TaskGroup, items: str) -> None:
    for item in items:
        tg.start_soon(ref.send, item)
        await anyio.wait_all_tasks_blocked()


async def test_concurrent_sends_to_a_busy_actor_are_delivered_in_call_order() -> None:
    handled: list[str] = []
    permits = anyio.Semaphore(0)
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Stepper(permits, handled), name="one", capacity=1)
        ref.send_nowait("busy")
        await anyio.wait_all_tasks_blocked()
        assert ref.mailbox_size == 0  # the handler holds it
        async with anyio.create_task_group() as tg:
            await _send_each_blocked(ref, tg, "abc")
            assert ref.mailbox_size == 1  # "a"; "b" and "c" wait for room
            for _ in range(4):
                permits.release()
                await anyio.wait_all_tasks_blocked()
        assert handled == ["busy", "a", "b", "c"]
        assert ref.mailbox_size == 0
        await ref.stop()


async def test_three_waiting_senders_are_served_in_the_order_they_came() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    got = []
    async with anyio.create_task_group() as tg:
        await _senders_in_order(tg, mailbox, "abc")
        for _ in range(4):
            got.append(mailbox.get_nowait())
            await anyio.wait_all_tasks_blocked()
    assert got == ["first", "a", "b", "c"]


async def test_a_receiver_draining_at_full_speed_gets_waiting_senders_in_order() -> None:
    for _ in range(20):  # trio varies the order it wakes tasks in
        mailbox = _mailbox(1)
        mailbox.put_nowait("first")
        got: list[str | None] = []
        async with anyio.create_task_group() as tg:
            await _senders_in_order(tg, mailbox, "abc")
            while len(got) < 4:
                item = await mailbox.get()
                if item is not None:
                    got.append(item)
        assert got == ["first", "a", "b", "c"]


async def test_room_promised_to_a_woken_sender_is_not_taken_by_a_newcomer() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    async with anyio.create_task_group() as tg:
        await _senders_in_order(tg, mailbox, "w")
        assert mailbox.get_nowait() == "first"  # wakes "w": the room is its
        with pytest.raises(anyio.WouldBlock):
            mailbox.put_nowait("late")
        await anyio.wait_all_tasks_blocked()
    assert mailbox.get_nowait() == "w"


async def test_three_senders_waiting_on_a_full_actor_mailbox_keep_their_order() -> None:
    handled: list[str] = []
    permits = anyio.Semaphore(0)
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: Stepper(permits, handled), name="one", capacity=1)
        ref.send_nowait("busy")
        await anyio.wait_all_tasks_blocked()
        ref.send_nowait("queued")
        async with anyio.create_task_group() as tg:
            await _send_each_blocked(ref, tg, "abc")
            for _ in range(5):
                permits.release()
                await anyio.wait_all_tasks_blocked()
        await ref.stop()
    assert handled == ["busy", "queued", "a", "b", "c"]


async def test_a_sender_granted_room_then_closed_out_gets_closed_resource_error() -> None:
    mailbox = _mailbox(1)
    mailbox.put_nowait("first")
    async with anyio.create_task_group() as tg:
        (late,) = await _senders_in_order(tg, mailbox, "l")
        assert mailbox.get_nowait() == "first"  # the freed slot is held for "l"...
        mailbox.close()  # ...but the mailbox closes before it can fill it
    assert late.outcome == "closed"  # refused, so the sender can dead-letter it: nothing lost
    with pytest.raises(anyio.EndOfStream):
        mailbox.get_nowait()


async def test_a_lingering_get_takes_mail_sent_during_its_pass_through_the_loop() -> None:
    mailbox = _mailbox(4)
    async with anyio.create_task_group() as tg:
        tg.start_soon(mailbox.put, "soon")  # runs while get() passes through the loop
        assert await mailbox.get(linger=True) == "soon"


async def test_a_lingering_get_still_waits_for_later_mail_and_sees_close() -> None:
    mailbox = _mailbox(4)
    got: list[str | None] = []

    async def receive_all() -> None:
        while True:
            try:
                got.append(await mailbox.get(linger=True))
            except anyio.EndOfStream:
                got.append("end")
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive_all)
        await anyio.wait_all_tasks_blocked()  # past its pass: waiting for mail now
        mailbox.put_nowait("later")
        await anyio.wait_all_tasks_blocked()
        mailbox.close()
    assert got == ["later", "end"]
