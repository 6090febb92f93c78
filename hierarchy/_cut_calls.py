"""Model calls cut in flight in a live run, charged as their providers bill them.

A run's planner-side call is watched (``CutWatch``) from its send until the planner takes
its reply (or its failure), and with it the judge calls its guards make meanwhile
(``judge_sent``), those in flight and those answered; a step's guards' judge calls are
charged through their purse (``cut_charged``). Each cut call is charged at what its reply
reported, if one came back, else at its most (``_in_flight.charge_cut``: an estimate).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, final

import anyio

from regiment._text import counted
from regiment.errors import OutputInvalid
from regiment.hierarchy._in_flight import charge_cut, most_spent
from regiment.hierarchy._raised_by import spent_by
from regiment.journal import ModelCallStarted
from regiment.models import ModelRequest, ModelResponse, Usage

if TYPE_CHECKING:
    from regiment.hierarchy._budget import BudgetLimit
    from regiment.hierarchy._model_call import ModelCaller
    from regiment.hierarchy._spent import Spent
    from regiment.hierarchy.guard._judge import JudgeCall, Purse
    from regiment.hierarchy.guard._roles import GuardRole

__all__ = (
    "Charging",
    "CutWatch",
    "answered_cut",
    "asked_again",
    "billed",
    "cut_charged",
    "judge_cut",
    "judge_done",
    "judge_sent",
    "judges_handed",
    "replied",
)

_log = logging.getLogger("regiment.run")
_PER_MILLION = 1_000_000


# The planner-side call watched in this task, if any (set while it is in flight): the
# reply guards of its role tell it the reply came back (``replied``) before they judge it.
_WATCHED: ContextVar[CutWatch | None] = ContextVar("regiment_cut_watch", default=None)


def replied(usage: Usage) -> None:
    """The planner-side call in flight in this task got its reply, which spent ``usage``
    (its guards judge it next): cut from now on, it is charged at that, not at its most."""
    watch = _WATCHED.get()
    if watch is not None:
        watch.got = (usage, 1)


def asked_again(request: ModelRequest, spent: Usage, calls: int) -> None:
    """The planner-side call watched in this task asks its model again with ``request``
    (a synthesis re-asked for an empty or invalid answer), its ``calls`` asks so far
    having spent ``spent``, not yet charged: cut from now on, they are charged at that,
    and the new ask at its most (or at what its reply said, once it came back)."""
    watch = _WATCHED.get()
    if watch is not None and (flying := watch._flying) is not None:
        watch._flying = (flying[0], flying[1], flying[2], request)
        watch.earlier, watch.got = (spent, calls), None


def judge_sent(key: str, role: str, caller: ModelCaller, request: ModelRequest) -> object:
    """A guard's judge call is sent from inside the planner-side call watched in this
    task, if any: watched with it (cut with it, it is charged at its most too). What to
    give ``judge_done`` as it ends (``None``: no call is watched here)."""
    watch = _WATCHED.get()
    if watch is None:
        return None
    judge = (key, role, caller, request)
    watch.judges.append(judge)
    return judge


def judge_done(
    judge: object, *, cut: bool = False, usage: Usage | None = None, calls: int = 1
) -> None:
    """The judge call ``judge_sent`` watched has ended (``cut``: cut in flight, by a
    cancel from outside: charged at its most now, unless its watch's cut charged it;
    ``usage``: answered (or failed), having spent that in ``calls`` model calls: charged
    with its call if that is cut before its guards are done, ``judges_handed``)."""
    watch = _WATCHED.get()
    if watch is None or judge is None:
        return
    for i, watched in enumerate(watch.judges):
        if watched is judge:
            del watch.judges[i]
            if cut:
                watch.judge_cut(watched)
            elif usage is not None:  # one model call each, as its chain charges them
                watch.answered_judges.append((watched[1], usage))
                watch.answered_judges.extend((watched[1], Usage()) for _ in range(calls - 1))
            return


def judges_handed() -> bool:
    """A guard chain of the planner-side call watched in this task is done: what its
    judges spent goes to the run's guard log (``GuardLog.spent``), charged from there.
    Whether it is the log's to charge (``False``: the call was cut meanwhile, and its
    watch charged it all: a guard that ran on in a thread, say)."""
    watch = _WATCHED.get()
    if watch is None:
        return True
    watch.answered_judges.clear()
    return not watch.settled


def billed(error: BaseException | None) -> tuple[Usage, int] | None:
    """What a failed planner-side call spent all the same, and in how many model
    calls: a refused reply, structured answers that never validated, or a call that
    failed saying nothing of its tokens (counted, none charged: ``spent_by``)."""
    if isinstance(error, OutputInvalid) and error.usage is not None:
        return error.usage, error.attempts
    return spent_by(error)


@final
class CutWatch:
    """A run's planner-side model call in flight (one at a time: its ``CallRunner`` runs
    them back to back), charged if it is cut: by the planner as it supersedes or stops
    it (``cut``, in its own task: before the run's result is made), or by a cancel from
    outside (its block's exit). Cut before its reply came back, it is charged at its most
    (``charge_cut``); after (its guards judged it, or it waited for the planner's turn
    and the run wound down meanwhile), at what the reply said it spent. It is watched
    until the planner takes its reply or its failure (``accepted``), or it is dropped
    (``dropped``): a failure that says what it spent (``billed``) is charged so too. Its
    guards' judge calls are charged with it: those in flight at their most, those that
    answered at what they spent, and what its guards' log holds uncharged (``pending``:
    ``GuardLog.spent``, a tripped reply's too)."""

    __slots__ = (
        "_call",
        "_flying",
        "_pending",
        "_reset",
        "_spent",
        "_where",
        "_whole",
        "answered_judges",
        "earlier",
        "got",
        "judges",
        "settled",
    )

    def __init__(
        self,
        spent: Spent,
        where: str,
        pending: list[tuple[GuardRole, ModelResponse]] | None = None,
        whole: bool = True,
    ) -> None:
        # ``whole``: the call itself is charged too (else its guards' judge calls alone: a
        # run whose budget holds no calls, with no critic, counts only those)
        self._spent, self._where, self._whole = spent, where, whole
        # the call in flight: its key, role, caller and request (its most worked out if cut)
        self._flying: tuple[str, str, ModelCaller, ModelRequest] | None = None
        self._call = ("", "")  # the watched call's key and role, once sent
        # what its reply (or its failure) spent, in how many model calls, once it came back
        self.got: tuple[Usage, int] | None = None
        # what its earlier asks spent (a synthesis asked again), not in ``got``
        self.earlier: tuple[Usage, int] | None = None
        self._reset: Token[CutWatch | None] | None = None
        # its guards' judge calls in flight (key, role, caller, request): cut with it
        self.judges: list[tuple[str, str, ModelCaller, ModelRequest]] = []
        # its guards' judge calls answered, their chain not done (role, usage)
        self.answered_judges: list[tuple[str, Usage]] = []
        # the run's guard log's charges not yet taken by the planner (role, response)
        self._pending: list[tuple[GuardRole, ModelResponse]] = [] if pending is None else pending
        self.settled = False  # the call was cut: all it and its guards spent is charged

    def sent(self, key: str, role: str, caller: ModelCaller, request: ModelRequest) -> CutWatch:
        """Watch the call ``key`` of ``role`` about to be sent (``with``: while it runs)."""
        self.dropped()  # one before it whose reply the planner never took (none, as a rule)
        self._flying, self.got, self.earlier = (key, role, caller, request), None, None
        self._call, self.settled = (key, role), False
        return self

    def __enter__(self) -> None:
        self._reset = _WATCHED.set(self)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._reset is not None:
            _WATCHED.reset(self._reset)  # the task's context as it was: the runner reuses it
            self._reset = None
        if kind is None:
            return  # answered: watched until the planner takes the reply (``answered``)
        if issubclass(kind, anyio.get_cancelled_exc_class()):
            self.cut()
            return
        # failed: watched until the planner takes the failure, which charges what it
        # says it spent (its earlier asks' too); dropped, it is charged here (a tripped
        # reply: in ``pending``)
        self._flying, self.got, self.earlier = None, billed(exc), None

    def answered(self, usage: Usage, calls: int) -> None:
        """The call's reply came back, having spent ``usage`` in ``calls`` model calls."""
        if self._flying is not None:
            self.got, self.earlier = (usage, calls), None  # its earlier asks' with it

    def accepted(self) -> None:
        """The planner took the reply: charged with it, it is watched no more."""
        self._flying = self.got = self.earlier = None
        self.answered_judges.clear()

    def dropped(self) -> None:
        """The call's reply (or failure) was handed to the planner, which did not take it
        (the run winding down, the call superseded): charge it now, if nothing did, and
        what its guards spent."""
        if self.got is not None or self.answered_judges or self._pending:
            self.cut()

    def judge_cut(self, judge: tuple[str, str, ModelCaller, ModelRequest]) -> None:
        """A judge call of the watched call's guards was cut in flight: charge it at its most."""
        key, role, caller, request = judge
        most = most_spent(caller, request)
        started = ModelCallStarted(run_id="", call_key=key, role=role, most=most)
        charge_cut(self._spent, started, f"{self._where}: {role}: a guardrail's judge")

    def cut(self) -> None:
        """The call in flight, if any, is cut: charge it at what its reply spent if it
        came back, else at its most; its guards' judge calls in flight at their most,
        and those that answered at what they spent."""
        while self.judges:
            self.judge_cut(self.judges.pop())
        flying, got, earlier = self._flying, self.got, self.earlier
        self._flying = self.got = self.earlier = None
        self.settled = True
        if not self._whole:  # its guards' judges alone
            self._charge_judges()
            return
        if earlier is not None:  # a synthesis' earlier asks: what their replies reported
            self._charge_got(*earlier)
        if flying is not None and got is None:
            key, role, caller, request = flying
            most = most_spent(caller, request)
            started = ModelCallStarted(run_id="", call_key=key, role=role, most=most)
            charge_cut(self._spent, started, f"{self._where}: {role}")
        elif got is not None:
            self._charge_got(*got)
        self._charge_judges()

    def _charge_got(self, usage: Usage, calls: int) -> None:
        key, role = self._call
        self._spent.charge(role, usage, model_calls=calls)
        _log.info(
            "%s: %s: the reply to its model call %s came back as the run wound down (or "
            "the call was superseded), and was not used; its provider billed it, so the run "
            "counts what it reported: %d tokens (%d input, %d output), $%.6f",
            self._where,
            role,
            key,
            usage.total_tokens,
            usage.whole_input_tokens,
            usage.output_tokens,
            usage.micro_usd / _PER_MILLION,
        )

    def _charge_judges(self) -> None:
        """Charge what the call's guards spent and the planner did not take: the judge
        calls that answered, and the guard log's charges (one model call each)."""
        spent = [*self.answered_judges, *((r, got.usage) for r, got in self._pending)]
        self.answered_judges.clear()
        self._pending.clear()
        if not spent:
            return
        total = Usage()
        for role, usage in spent:
            self._spent.charge(role, usage, model_calls=1)
            total = total + usage
        key = self._call[0]
        _log.info(
            "%s: the guardrails of %s made %s that answered before it was "
            "cut or its reply dropped; a provider bills each, so the run counts what "
            "each reported: %d tokens, $%.6f",
            self._where,
            f"its model call {key}" if key else "its plan or answer check",
            counted(len(spent), "model call"),
            total.total_tokens,
            total.micro_usd / _PER_MILLION,
        )


@final
class Charging:
    """A purse whose run charges its judge calls cut in flight (``cut_charged``)."""

    __slots__ = ("_left", "spent")

    def __init__(self, left: Purse, spent: Spent) -> None:
        self._left, self.spent = left, spent

    def __call__(
        self, request: ModelRequest, made: Sequence[ModelResponse], call: JudgeCall
    ) -> tuple[BudgetLimit, str] | int | None:
        return self._left(request, made, call)


def cut_charged(purse: Purse, spent: Spent) -> Purse:
    """``purse``, whose judge calls cut in flight (their step or run cut: a replan, a
    cancel, the wall clock) are charged to ``spent`` (the run's, in its process) at their
    most, as the run's other calls cut so are (``charge_cut``)."""
    return Charging(purse, spent)


def answered_cut(spent: Spent, role: str, responses: Sequence[ModelResponse]) -> None:
    """A guard chain judging ``role``'s call was cut: charge ``spent`` with the judge
    calls it made that answered, at what they reported (one model call each); those of a
    planner-side call are its ``CutWatch``'s to charge (it charged them as it was cut)."""
    if _WATCHED.get() is not None:
        return
    total = Usage()
    for response in responses:
        spent.charge(role, response.usage, model_calls=1)
        total = total + response.usage
    _log.info(
        "%s: a guard chain judging its call was cut after %s answered; "
        "a provider bills each, so the run counts what each reported: %d tokens, $%.6f",
        role,
        counted(len(responses), "judge call"),
        total.total_tokens,
        total.micro_usd / _PER_MILLION,
    )


def judge_cut(
    spent: Spent, key: str, role: str, caller: ModelCaller, request: ModelRequest
) -> None:
    """A guard's judge call ``key``, judging ``role``'s call, was cut in flight: charge
    ``spent`` with it at its most."""
    started = ModelCallStarted(run_id="", call_key=key, role=role, most=most_spent(caller, request))
    charge_cut(spent, started, f"{role}: a guardrail's judge")
