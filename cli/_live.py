"""The live table the ``regiment`` command shows on a terminal (needs rich, the ``cli`` extra)."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from regiment._text import counted, visible
from regiment.cli._progress import RunProgress, StepRow, TokenMeter
from regiment.cli._view import cached, cut
from regiment.hierarchy import events as ev
from regiment.models import usd_text

__all__ = ("LiveView",)

_STYLES = {
    "waiting": "dim",
    "running": "yellow",
    "done": "green",
    "failed": "red",
    "check failed": "magenta",
    "replaced": "dim strike",
    "cancelled": "red",
}


_ANSWER_LINES = 8  # lines of the answer shown while it is being written


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class LiveView:
    """A table of the current plan's steps, redrawn in place (rich ``Live``)."""

    def __init__(self, progress: RunProgress, console: Console, meter: TokenMeter) -> None:
        self._progress = progress
        self._meter = meter
        # Refreshed by the command's own ticker task, not by a rich thread.
        self._live = Live(console=console, auto_refresh=False, transient=False)

    def show(self, event: ev.Event) -> None:
        """Redraw after the event."""
        self.tick()

    def tick(self) -> None:
        """Redraw (clocks and token counts move between events too)."""
        self._live.update(self._render(), refresh=True)

    def __enter__(self) -> Self:
        self._live.start(refresh=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._live.update(self._render(), refresh=True)
        self._live.stop()

    def _render(self) -> Group:
        p = self._progress
        head = Text.assemble(
            (f"team {p.team or '?'}", "bold"),
            f"  plan v{p.version}  ",
            (p.phase, "cyan"),
            f"  {p.elapsed():.1f} s  {counted(max(self._meter.total(), p.tokens), 'token', grouped=True)}",
            cached(p.usage),
            f"  {usd_text(p.micro_usd)}" if p.micro_usd else "",
        )
        table = Table(show_edge=False, pad_edge=False, expand=False)
        for column in ("step", "worker", "status", "elapsed", "tokens", "description"):
            table.add_column(column, no_wrap=column != "description")
        now = p.clock()
        for row in p.steps.values():
            table.add_row(*self._cells(row, now))
        replans = [Text(visible(f"replan {line}"), style="magenta") for line in p.replans]
        failures = [Text(cut(line, 160), style="red") for line in p.tool_failures]
        # The answer as it streams; once the run ends it is printed to stdout instead.
        answer = p.answer.strip() and not p.finished
        writing = [Text(visible(_tail(p.answer, _ANSWER_LINES)), style="bold")] if answer else []
        return Group(head, table, *replans, *failures, *writing)

    def _cells(self, row: StepRow, now: float) -> tuple[str | Text, ...]:
        elapsed = row.elapsed(now)
        # Reported once the step ends (with tracing off too); while it runs, its spans'.
        tokens = row.tokens or self._meter.step_tokens(row.id)
        return (
            visible(row.id),  # a model's plan names it
            visible(row.worker),
            Text(row.state, style=_STYLES[row.state]),
            "" if elapsed is None else f"{elapsed:.1f} s",
            f"{tokens:,}" if tokens else "",
            cut(row.note or row.description, 70),
        )
