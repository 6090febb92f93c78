"""A planner phase's verdict on its span: a check's, the critic's, a refused plan reply,
a compression's result.

Mixed into ``SpanRecorder`` (reached as ``telemetry.recorder``).
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.trace import Span

from regiment.telemetry import _semconv as sc
from regiment.telemetry._content import redacted_cut
from regiment.telemetry._scope import mark_error

__all__ = ("VerdictRecorder",)

_DETAIL_LIMIT = 512


class VerdictRecorder:
    """Verdicts on ``verify``, ``critique``, ``plan`` and ``replan`` spans; the
    explanations (content) only when ``capture`` is on, else their length."""

    capture: bool

    def check(self, span: Span, *, passed: bool, detail: str = "") -> None:
        """Record a check's verdict on its ``verify`` span.

        A failed check is an outcome, not an error: the span status stays unset.
        The explanation is recorded only when capture is on; otherwise its length.
        """
        if not span.is_recording():
            return
        span.set_attribute(sc.REGIMENT_CHECK_PASSED, passed)
        if not detail:
            return
        # The explanation quotes the step's output: content, so opt-in only.
        if self.capture:
            span.set_attribute(sc.REGIMENT_CHECK_DETAIL, redacted_cut(detail, _DETAIL_LIMIT))
        else:
            span.set_attribute(sc.REGIMENT_CHECK_DETAIL_LENGTH, len(detail))

    def plan_refused(self, span: Span, problems: Sequence[str]) -> None:
        """Mark a ``plan`` or ``replan`` span whose reply gave no valid plan (the run asks
        again, or fails out of attempts): ERROR, ``error.type=invalid_plan``; the
        problems (they quote the reply) are the status text only with capture on."""
        mark_error(span, sc.ERROR_INVALID_PLAN, "; ".join(problems), capture=self.capture)

    def critique(self, span: Span, *, passed: bool | None, feedback: str = "") -> None:
        """Record the critic's verdict on its ``critique`` span (``None``: the reply was
        no verdict, ERROR ``invalid_verdict``). A failed round is a verdict, not an error;
        the feedback is content: recorded with capture on, else its length."""
        if not span.is_recording():
            return
        if passed is None:
            mark_error(span, sc.ERROR_INVALID_VERDICT, "the critic's reply was no verdict")
            return
        span.set_attribute(sc.REGIMENT_CRITIQUE_PASSED, passed)
        if not feedback:
            return
        if self.capture:
            span.set_attribute(sc.REGIMENT_CRITIQUE_FEEDBACK, redacted_cut(feedback, _DETAIL_LIMIT))
        else:
            span.set_attribute(sc.REGIMENT_CRITIQUE_FEEDBACK_LENGTH, len(feedback))

    def compressed(self, span: Span, *, before_tokens: int, after_tokens: int) -> None:
        """Record on a ``compress`` span how many tokens of carried context it shrank
        to how many (estimated, as the compression threshold counts them)."""
        if span.is_recording():
            span.set_attributes(
                {
                    sc.REGIMENT_COMPRESS_BEFORE_TOKENS: before_tokens,
                    sc.REGIMENT_COMPRESS_AFTER_TOKENS: after_tokens,
                }
            )

    def replan(
        self, span: Span, *, new_version: int, steps: int | None = None, planner: str = ""
    ) -> None:
        """Record the plan version a replan's ``plan`` span produced (and how many steps it has), and
        the ``planner`` that makes it (``gen_ai.agent.name``, as its ``chat`` span)."""
        if not span.is_recording():
            return
        span.set_attribute(sc.REGIMENT_PLAN_NEW_VERSION, new_version)
        span.set_attribute(sc.REGIMENT_PLAN_VERSION, new_version)  # as a first plan's says
        if planner:
            span.set_attribute(sc.GEN_AI_AGENT_NAME, planner)
        if steps is not None:
            span.set_attribute(sc.REGIMENT_PLAN_STEPS, steps)
