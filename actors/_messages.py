"""The values the runtime passes around: envelopes, dead letters, child failures."""

from __future__ import annotations

from typing import Generic, Literal, Never, TypeVar

import msgspec

# At run time too, so that help(), inspect.signature and msgspec can resolve the fields.
from regiment.actors._ref import ActorRef
from regiment.actors._reply import ReplySlot

__all__ = ("ChildFailed", "DeadLetter", "DeadLetterReason", "Envelope")

M = TypeVar("M")
R = TypeVar("R")

DeadLetterReason = Literal["stopped", "cancelled", "failed"]
"""Why a message could not be handled.

* ``"stopped"``: the recipient no longer accepted messages when it was sent.
* ``"cancelled"``: it was queued when the recipient was cancelled (the system
  closed, or the recipient's parent restarted or stopped).
* ``"failed"``: it was queued when the recipient failed for good (escalated).
"""


class Envelope(msgspec.Struct, Generic[M, R], frozen=True, kw_only=True):
    """One message in a mailbox, with what the runtime needs to deliver it.

    Attributes:
        message: the payload, one of the recipient's message types.
        sender: the actor that sent it, or None when sent from outside any actor.
        reply_to: where an ask's reply goes (internal; None for ``send``).
        message_id: unique within the actor system (``"<system prefix>-<number>"``).
        headers: context carried with the message (W3C ``traceparent`` and friends).
    """

    message: M
    sender: ActorRef[Never, object] | None
    reply_to: ReplySlot[R] | None
    headers: dict[str, str]
    # message_id's parts: the text is built only when read (nearly never), not twice a
    # plan step (an f-string was ~1.6k CPU instructions of each envelope, issue #22).
    _id_prefix: str
    _id_number: int

    @property
    def message_id(self) -> str:
        """Unique within the actor system."""
        return f"{self._id_prefix}-{self._id_number}"

    def __repr__(self) -> str:  # as a Struct with a message_id field reads
        return (
            f"Envelope(message={self.message!r}, sender={self.sender!r}, "
            f"reply_to={self.reply_to!r}, message_id={self.message_id!r}, "
            f"headers={self.headers!r})"
        )


class DeadLetter(msgspec.Struct, frozen=True, kw_only=True):
    """A message that was never handled, kept so it is not lost silently.

    Attributes:
        recipient: name of the actor it was meant for.
        message: the payload.
        reason: why it was not handled (see ``DeadLetterReason``).
        message_id: the envelope's id.
    """

    recipient: str
    message: object
    reason: DeadLetterReason
    message_id: str


class ChildFailed(msgspec.Struct, frozen=True, kw_only=True):
    """A child actor failed beyond its restart policy; delivered to the parent.

    The parent's ``on_child_failed`` receives it between two messages, never
    while a handler is running. By default the parent re-raises ``error``.

    Attributes:
        child: the failed child (now stopped).
        error: the child's last failure.
    """

    child: ActorRef[Never, object]
    error: Exception
