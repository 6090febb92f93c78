"""The run journal: what a run did, durably, so a crashed run resumes without repeating side effects.

One small interface, :class:`Journal`, three backends that pass one shared test
suite: :class:`MemoryJournal` (the library default, ``journal=None``),
:class:`SqliteJournal` (one file; the default wherever a file is wanted) and
:class:`PostgresJournal` (several processes sharing runs; ``pip install
'regiment[postgres]'``). ``await open_journal(spec)`` picks one: ``None``, a path,
a ``postgresql://`` URL, or a ``Journal`` object passed through. Every method is
async and runs on asyncio and trio; the SQL backends do their blocking work on
one worker thread at a time (``anyio.to_thread`` with a capacity limiter of 1).

Records
    A closed, tagged union of frozen msgspec structs (:data:`Record`), encoded as
    JSON. Each names its ``run_id`` and gets a per-run sequence number, dense from
    1, in append order; ``append`` returns it. :class:`RunCreated` (team, config
    hash, goal, session, created_at, the :class:`TeamFile` a CLI run came from, a
    :func:`deps_hash` of its deps) is
    always number 1 and :class:`RunFinished`
    the last. Between them: :class:`RunResumed` (each time a process takes the
    run over to finish it), :class:`PlanVersion`, :class:`StepDispatched` (intent)
    and :class:`StepReported` (result, with ``committed``), :class:`ToolCallStarted`
    (intent, with the idempotency key) and :class:`ToolCallFinished` (result),
    :class:`ModelCallStarted` (intent, a budgeted run's: the most the call may spend)
    and :class:`ModelCallFinished` (the response, usage inside; a call that failed once
    sent, a worker's or a guard's judge's: its error, ``failed``), :class:`EventRecorded`
    (events in order: the sequence number orders them), :class:`ApprovalRequested`
    and :class:`ApprovalDecided`. What the engine owns and may reshape (a plan, a
    step report, an event, the ``RunResult``) travels as a JSON object
    (``msgspec.to_builtins`` in, ``msgspec.convert`` out), so this room never
    imports the engine: hooking it in is one ``append`` per state change.

Keys
    A resume asks by key instead of scanning: ``tool_call(run_id, plan_version,
    step_id, call_index)`` gives the intent and, unless the call was in flight at
    the crash, its result (replay it; an intent without a result is run again with
    the intent's idempotency key); ``model_response(run_id, call_key)`` gives a
    response to replay instead of re-sending (``call_key`` is the engine's stable
    name for the call, e.g. ``"plan/1"``); ``approval(run_id, approval_id)`` gives
    an approval's request and, once taken, its decision (``find_approval(journal,
    approval_id)``, in whichever run holds it). ``pending_approvals()`` lists requests
    without a decision of the runs that have not ended; ``session_history(session)`` gives the earlier runs of a
    session (goal, status, answer, committed step outputs), oldest first.

Nested runs
    The run of a nested team (a step given to a ``TeamWorker``) of a journaled run
    is a run of the same journal, its ``RunCreated.parent`` the run it serves, its id
    :func:`nested_run_id` (the parent's id, plan version, step and attempt, joined by
    :data:`NESTED_MARK`, which no top-level run's id has). ``list_runs`` leaves nested
    runs out; ``get_run`` and ``read`` take their ids; :func:`not_resumable_alone`
    says why one is not resumed by itself (its top-level run's resume finishes it).
    A nested run belongs to whoever owns its top-level run: ``acquire`` of the top
    run takes the leases its previous owner held on its nested runs with it (their
    tokens go up, they are free for the new owner), and a nested run is neither
    created nor acquired for another owner while one holds its top run.

Writes and durability
    ``append`` encodes the record and buffers it; ``append(..., durable=True)``,
    ``flush``, reads, lease calls and ``close`` commit the buffer. One caller
    commits everything buffered, every run's records, in one transaction while the
    others wait and join the next (group commit), so appends are cheap and a
    record that must survive a crash before a side effect (a tool call intent, a
    pending approval, the result) is awaited as durable: its commit reaches the
    disk (SQLite fsyncs only such commits under its default ``synchronous="normal"``;
    ``flush`` commits without one). Commits keep append
    order: when record *n* is durable, so is every record before it. A write that
    fails (disk full, database down, a lock held past ``busy_timeout``) raises
    :class:`JournalError` from that call and from every later call of the same
    lease: a run never goes on unjournaled.

Ownership
    One owner writes a run at a time. ``create_run`` and ``acquire`` return a
    :class:`Lease` (owner, fencing token, expiry); ``renew`` is the heartbeat
    (:func:`heartbeat` runs it in a task beside the work), ``release`` lets go. ``acquire`` raises :class:`LeaseHeld` while another
    owner's lease is alive and takes the run over once it has expired, with the
    token incremented; a lease whose owner is a process of this machine that is gone
    (owners are named by :func:`process_owner`: host, pid, and the process's boot,
    pid namespace and start time) counts as expired at once. Every write carries the lease, and the store checks token,
    owner and the next sequence number inside the write transaction (SQLite:
    ``BEGIN IMMEDIATE`` holds the file's write lock; PostgreSQL: ``SELECT ... FOR
    UPDATE`` locks the run rows, in run id order); a zombie's write raises
    :class:`LeaseLost` and nothing of it is kept. A run that has not finished and
    whose lease has expired (or was released), or whose owner is a process of this
    machine that is gone, lists as ``stalled``; one with an
    undecided approval as ``paused``, unless its lease lapsed so before it got to its
    pause (its process died while its other steps worked): ``stalled``. Leases use the journal's
    ``clock`` (default ``time.time``), so processes sharing a database need
    clocks in step to well within a lease's ``ttl``.

Hooking in (one call per state change)
    Start: ``lease = await journal.create_run(RunCreated(...), owner=..., ttl=...)``
    and run :func:`heartbeat` beside the work. Then ``append`` as things happen;
    make durable what must survive a crash before the next side effect: the
    :class:`ToolCallStarted` intent before the tool body runs, an
    :class:`ApprovalRequested` before the run pauses, the :class:`RunFinished`
    result; then ``release``. Everything else may stay buffered: a lost tail is
    redone on resume (a model call re-sent, a step re-dispatched), and a tool
    call whose result was lost runs again with the same idempotency key.
    Resume: ``acquire`` the run, ``read`` it, and while re-running, ask
    ``model_response`` and ``tool_call`` before each call; keep appending with
    the new lease (sequence numbers continue).

Schema
    Three tables, the same in both SQL backends: ``journal_meta`` (``format`` =
    ``regiment.journal`` and ``schema_version``, written in the transaction that
    creates the journal, so the version is there from the first row),
    ``journal_runs`` (one row per run: listing fields, ``final_status``,
    ``pending_approvals``, ``owner``/``token``/``lease_expires_at``,
    ``last_seq``) and ``journal_records`` (``run_id``, ``seq``, ``kind``, the
    look-up ``key``, ``recorded_at``, the JSON ``body``; primary key ``(run_id,
    seq)``, a partial index on ``(run_id, key)``). An older schema is migrated by
    code in ``_schema.py``, one version step at a time, in one transaction; a
    newer one is refused with a :class:`JournalError` and left untouched, and so
    is a file that is not a journal or is damaged. A record of a kind a newer
    regiment wrote (same schema, a new record type) is left out of ``read``, with a
    warning naming its kind (``regiment show`` prints it), and refused with
    :class:`NewerRecord` (a ``JournalError``: "upgrade regiment") by a run's own
    reads, so a resume never replays a run without it; it stays in the journal.
"""

from typing import TYPE_CHECKING

from regiment._lazy import LazyNames
from regiment.errors import JournalError, LeaseHeld, LeaseLost, UnknownRun

__all__ = (
    "ApprovalDecided",
    "ApprovalRequested",
    "CommittedStep",
    "Entry",
    "EventRecorded",
    "FinalStatus",
    "Journal",
    "JournalError",
    "JournalSpec",
    "JournaledApproval",
    "JournaledCall",
    "Lease",
    "LeaseHeld",
    "LeaseLost",
    "UnknownRun",
    "MemoryJournal",
    "ModelCallFinished",
    "ModelCallStarted",
    "NESTED_MARK",
    "NewerRecord",
    "PlanVersion",
    "PostgresJournal",
    "Record",
    "RunCreated",
    "RunFinished",
    "RunInfo",
    "RunResumed",
    "RunStatus",
    "SessionRun",
    "SqliteJournal",
    "StepDispatched",
    "StepReported",
    "TeamFile",
    "ToolCallFinished",
    "ToolCallStarted",
    "deps_hash",
    "describe_owner",
    "find_approval",
    "heartbeat",
    "nested_run_id",
    "not_resumable_alone",
    "open_journal",
    "patient_reads",
    "process_owner",
    "read_run",
    "top_run_id",
)

# Each name loads with its module on first use (issue #22): a run without a journal
# loads none of it; the SQL backends (sqlite3, the schema code) load only when a
# run is given a file or a URL.
_LAZY_NAMES = LazyNames(
    __name__,
    {
        "regiment.journal._codec": ("NewerRecord",),
        "regiment.journal._postgres": ("PostgresJournal",),
        "regiment.journal._sqlite": ("SqliteJournal",),
        "regiment.journal._heartbeat": ("heartbeat",),
        "regiment.journal._lookups": ("read_run",),
        "regiment.journal._owners": ("describe_owner", "process_owner"),
        "regiment.journal._patience": ("patient_reads",),
        "regiment.journal._memory": ("MemoryJournal",),
        "regiment.journal._nesting": (
            "NESTED_MARK",
            "nested_run_id",
            "not_resumable_alone",
            "top_run_id",
        ),
        "regiment.journal._open": (
            "JournalSpec",
            "open_journal",
        ),
        "regiment.journal._protocol": ("Journal",),
        "regiment.journal._requests": ("find_approval",),
        "regiment.journal._records": (
            "ApprovalDecided",
            "ApprovalRequested",
            "EventRecorded",
            "FinalStatus",
            "ModelCallFinished",
            "ModelCallStarted",
            "PlanVersion",
            "Record",
            "RunCreated",
            "RunFinished",
            "RunResumed",
            "StepDispatched",
            "StepReported",
            "TeamFile",
            "ToolCallFinished",
            "ToolCallStarted",
            "deps_hash",
        ),
        "regiment.journal._views": (
            "CommittedStep",
            "Entry",
            "JournaledApproval",
            "JournaledCall",
            "Lease",
            "RunInfo",
            "RunStatus",
            "SessionRun",
        ),
    },
)

if TYPE_CHECKING:
    from regiment.journal._codec import NewerRecord
    from regiment.journal._heartbeat import heartbeat
    from regiment.journal._lookups import read_run
    from regiment.journal._memory import MemoryJournal
    from regiment.journal._nesting import (
        NESTED_MARK,
        nested_run_id,
        not_resumable_alone,
        top_run_id,
    )
    from regiment.journal._open import JournalSpec, open_journal
    from regiment.journal._owners import describe_owner, process_owner
    from regiment.journal._patience import patient_reads
    from regiment.journal._postgres import PostgresJournal
    from regiment.journal._protocol import Journal
    from regiment.journal._records import (
        ApprovalDecided,
        ApprovalRequested,
        EventRecorded,
        FinalStatus,
        ModelCallFinished,
        ModelCallStarted,
        PlanVersion,
        Record,
        RunCreated,
        RunFinished,
        RunResumed,
        StepDispatched,
        StepReported,
        TeamFile,
        ToolCallFinished,
        ToolCallStarted,
        deps_hash,
    )
    from regiment.journal._requests import find_approval
    from regiment.journal._sqlite import SqliteJournal
    from regiment.journal._views import (
        CommittedStep,
        Entry,
        JournaledApproval,
        JournaledCall,
        Lease,
        RunInfo,
        RunStatus,
        SessionRun,
    )


def __getattr__(name: str) -> object:
    return _LAZY_NAMES.load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
