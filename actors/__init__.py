"""The actor runtime: typed actors on anyio, supervised, with bounded mailboxes.

An actor is a subclass of :class:`Actor` whose ``receive`` handles a closed
union of message types, one message at a time. Actors live inside an actor
system opened with ``async with open_actor_system() as system:``; every actor
task belongs to that block's task group.

Messages and replies:

* ``await ref.send(msg)`` waits while the mailbox is full (backpressure);
  ``ref.send_nowait(msg)`` raises :class:`~regiment.errors.MailboxFull`.
  Mailboxes are bounded FIFOs of :class:`Envelope`; waiting senders get room in
  the order they came.
* ``await ref.ask(msg, timeout=...)`` returns what ``receive`` returned, raises
  :class:`~regiment.errors.AskTimeout` naming the actor and the message type,
  or raises what the handler raised. A reply to an asker that has gone away
  (timed out, cancelled) is dropped; it is not an error for the replier.
* Each envelope carries the sender, the reply slot, a message id and
  ``headers: dict[str, str]``. A :class:`ContextPropagator` given to the system
  fills the headers on send/ask (unless explicit headers are given) and is
  entered around each ``receive`` call, so trace context crosses actors without
  handlers touching it.

* ``ctx.envelope`` is the envelope of the message being handled; it is only
  available while ``receive`` runs (read it there, not in a helper task).
* An actor that asks itself from ``receive`` waits for itself forever; use a
  helper task (``ctx.start_soon``) or ``send``.
* Cost: a send into a mailbox with room, and the actor picking up queued mail,
  use anyio's ``send_nowait``/``receive_nowait`` fast paths and do not yield to
  the event loop (``send`` still raises if the caller is already cancelled;
  ``ask`` yields while it waits for the reply). The loop yields once every 64
  messages handled back to back, so a busy actor cannot starve the others.
  An actor that defines ``receive_now`` may take a ``send`` in the sender's
  task when it is idle with an empty mailbox (no wake-up of its own task);
  ``receive_message_now`` is the same offer made before any envelope exists
  (the message, its sender and its headers, nothing copied): workers use it
  to hand a step straight to a waiting runner. One that
  defines ``receive_here`` may handle a ``send_here`` in the sender's task
  even if the handler awaits (run with :func:`in_context` in the actor's own
  context variables; :class:`ContextTurns` for many handlers in one context): a
  run's planner takes a step's report so.
* ``ctx.spawn_dormant(...)`` starts such an actor in the spawner's task with no
  task of its own: its task starts only when a message has to be queued, it
  starts a helper task or it stops itself; stopped before that, ``on_stop``
  runs in the stopper's task. A run's planner is spawned so (its ``on_start``
  must not await, and it cannot spawn children).
* Waiting (a mailbox's receiver, an ask's reply) is on a :class:`Wakeup`, not an
  ``anyio.Event`` per wait: ``system.new_wakeup()`` makes one for the running
  backend (a loop future on asyncio, a parked task on trio), and a task that
  waits again and again reuses it. ``wake()`` before ``wait()`` is remembered.

Stopping and dead letters:

* ``await ref.stop()`` is graceful: the mailbox refuses new messages, queued
  ones are handled, children are stopped (newest first), then ``on_stop`` runs.
* Leaving the ``async with`` block stops every actor: in-flight handlers are
  cancelled, queued messages become dead letters (reason ``"cancelled"``),
  pending asks fail with :class:`~regiment.errors.ActorStopped`, children stop
  before their parents, and ``on_stop`` runs shielded from cancellation. No
  task is left behind.
* A message sent to an actor that no longer accepts messages raises
  ActorStopped and becomes a dead letter (reason ``"stopped"``); messages
  queued when an actor fails for good become dead letters too (``"failed"``).
  Dead letters are counted (``system.dead_letter_count``), the newest are kept
  (``system.dead_letters``), and ``on_dead_letter`` sees each one: never lost
  silently.

Supervision:

* When ``receive``, ``on_start``, ``on_child_failed`` or a task started with
  ``ctx.start_soon`` raises, the instance is retired (its tasks and children
  cancelled, ``on_stop`` run) and a fresh one is made by the factory; the
  mailbox and its queued messages are kept. A :class:`RestartPolicy` allows
  ``max_restarts`` restarts within ``within`` seconds; the next failure
  escalates: to the parent's ``on_child_failed`` as a :class:`ChildFailed`
  (by default the parent re-raises, so it fails too), or, for a top-level
  actor, out of the ``async with`` block as :class:`~regiment.errors.ActorFailed`
  chained from the handler's exception.
* If the first ``on_start`` raises, ``spawn`` raises ActorFailed instead.
* Cancellation is never a failure. An exception from ``on_stop`` is a bug in
  the actor: it leaves the ``async with`` block as ActorFailed.
"""

from regiment.actors._actor import Actor, ActorContext
from regiment.actors._in_context import ContextTurns, in_context
from regiment.actors._messages import ChildFailed, DeadLetter, DeadLetterReason, Envelope
from regiment.actors._policy import RestartPolicy
from regiment.actors._propagation import ContextPropagator
from regiment.actors._ref import ActorRef
from regiment.actors._system import ActorSystem, open_actor_system
from regiment.actors._wakeup import Wakeup

__all__ = (
    "Actor",
    "ActorContext",
    "ActorRef",
    "ActorSystem",
    "ChildFailed",
    "ContextPropagator",
    "ContextTurns",
    "DeadLetter",
    "DeadLetterReason",
    "Envelope",
    "RestartPolicy",
    "Wakeup",
    "in_context",
    "open_actor_system",
)
