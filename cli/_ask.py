"""``regiment run --approve ask``: a call that needs approval is asked about on the terminal.

The answer comes from an in-process approver (``Toolset(approver=...)``) given to
every worker's tool set, so the call goes on at once instead of pausing the run.
One question at a time; the reading happens in a daemon thread, so the run's
other steps go on while the human thinks.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Coroutine
from typing import TextIO, final

import anyio
import anyio.to_thread
import msgspec

from regiment.errors import ConfigError
from regiment.hierarchy import Team, TeamWorker, Worker
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Deny,
    EditArguments,
    MCPServer,
    Tool,
    Toolset,
)

__all__ = ("TerminalApprover", "asking", "check_terminal")

PROMPT = "approve? [y]es / [n]o / [e]dit JSON: "


def check_terminal(stdin: TextIO | None, *, journaled: bool = True) -> None:
    """Raise ``ConfigError`` (a usage error) unless ``stdin`` is a terminal to ask on
    (``journaled``: the run has a journal, so a run that pauses instead can go on).
    ``None`` is a closed stdin (``<&-``: Python then has ``sys.stdin`` ``None``)."""
    if stdin is not None and stdin.isatty():
        return
    if not journaled:  # a run paused under --no-journal cannot go on: no approve, no resume
        raise ConfigError(
            "--approve ask needs a terminal to ask on, and stdin is not one; without one, "
            "drop --no-journal and let the run pause (leave out --approve ask): a run "
            "paused without a journal cannot go on; then list the requests with "
            "`regiment approvals RUN_ID`, decide with `regiment approve RUN_ID REQUEST_ID`, "
            "then `regiment resume RUN_ID`"
        )
    raise ConfigError(
        "--approve ask needs a terminal to ask on, and stdin is not one; without one, "
        "let the run pause (leave out --approve ask), list the requests with "
        "`regiment approvals RUN_ID`, decide with `regiment approve RUN_ID REQUEST_ID`, "
        "then `regiment resume RUN_ID` (`regiment resume TEAM_FILE RUN_ID` for a run "
        "started from code or by the service)"
    )


@final
class TerminalApprover:
    """Asks on ``stderr`` and reads the answer from ``stdin``, one request at a time
    (``for_tools`` makes the approver each worker's tool set gets)."""

    def __init__(self, stdin: TextIO, stderr: TextIO) -> None:
        self._stdin = stdin
        self._stderr = stderr
        self._lock = anyio.Lock()

    def for_tools(
        self, toolset: Toolset
    ) -> Callable[[ApprovalRequest], Coroutine[object, object, ApprovalDecision]]:
        """The approver of one tool set (an async one): edited arguments are checked
        against its tools."""

        async def ask(request: ApprovalRequest, /) -> ApprovalDecision:
            tool = toolset.get(request.tool_name)
            async with self._lock:
                return await self._in_reader_thread(request, tool)

        return ask

    async def _in_reader_thread(
        self, request: ApprovalRequest, tool: Tool[..., object] | None
    ) -> ApprovalDecision:
        """Ask in a daemon thread: a run cancelled mid-question (Ctrl-C) leaves that thread
        blocked on the terminal, and a daemon thread does not keep the process alive."""
        answer: list[ApprovalDecision | BaseException] = []
        done = threading.Event()

        def read() -> None:
            try:
                answer.append(self._ask(request, tool))
            except BaseException as exc:  # handed to the waiting task, raised there
                answer.append(exc)
            finally:
                done.set()

        threading.Thread(target=read, name="regiment-approve-ask", daemon=True).start()
        try:
            await anyio.to_thread.run_sync(done.wait, abandon_on_cancel=True)
        finally:
            done.set()  # when cancelled: frees the worker thread that waits
        if isinstance(answer[0], BaseException):
            raise answer[0]
        return answer[0]

    def _ask(self, request: ApprovalRequest, tool: Tool[..., object] | None) -> ApprovalDecision:
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        where = f" (step {request.step_id})" if request.step_id else ""
        self._say(f"approval needed{where}: {request.tool_name}({arguments})\n")
        while True:
            line = self._read(PROMPT)
            if line is None:
                return Deny(reason="no answer: the terminal's input ended")
            verb, _, rest = line.strip().partition(" ")
            match verb.lower():
                case "y" | "yes":
                    return Approve()
                case "n" | "no":
                    reason = rest.strip() or (self._read("reason: ") or "").strip()
                    return Deny(reason=reason or "denied at the terminal")
                case "e" | "edit":
                    text = rest.strip() or self._read("arguments (JSON object): ")
                    edited = self._edited(text, tool)
                    if edited is not None:
                        return edited
                case _:
                    self._say("answer y (run it), n (do not run it) or e (run it with new JSON)\n")

    def _edited(self, text: str | None, tool: Tool[..., object] | None) -> EditArguments | None:
        """The edit ``text`` asks for; ``None`` (said why) when it is no JSON object or
        does not fit the tool's schema."""
        try:
            value = msgspec.json.decode((text or "").strip().encode())
        except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: nested deep
            self._say(f"not JSON ({exc}); give the arguments as one JSON object\n")
            return None
        if not isinstance(value, dict):
            self._say('the arguments must be one JSON object, like {"order_id": "1"}\n')
            return None
        problem = None if tool is None else tool.check_arguments(value)
        if problem is not None:
            self._say(f"those arguments do not validate: {problem}; decide again\n")
            return None
        return EditArguments(arguments=value, reason="edited at the terminal")

    def _read(self, prompt: str) -> str | None:
        self._say(prompt)
        line = self._stdin.readline()
        return line if line else None  # "" is the end of the input

    def _say(self, text: str) -> None:
        self._stderr.write(text)
        self._stderr.flush()


def asking(team: Team, approver: TerminalApprover) -> Team:
    """``team`` with ``approver`` deciding the calls of every worker, nested teams',
    MCP workers' and Ray-placed ones' included (a replica's calls that need approval
    come to the team's approval gate here, which asks the worker's tool set's approver)."""
    workers: list[Worker | TeamWorker] = []
    for worker in team.workers:
        if isinstance(worker, TeamWorker):
            worker = dataclasses.replace(worker, team=asking(worker.team, approver))
        else:
            toolset = worker.toolset
            asked = Toolset(
                toolset.name,
                toolset.tools,
                max_concurrency=toolset.max_concurrency,
                approver=approver.for_tools(toolset),
                max_result_chars=toolset.max_result_chars,
            )
            # An MCP worker keeps its servers; its live tools keep the set's approver.
            tools: Toolset | list[Toolset | MCPServer] = (
                [asked, *worker.mcp_servers] if worker.mcp_servers else asked
            )
            worker = dataclasses.replace(worker, tools=tools)
        workers.append(worker)
    return dataclasses.replace(team, workers=workers)
