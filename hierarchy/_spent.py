"""What a run has really spent: in total (checked against its budget by the ledger)
and by role (the result's ``usage_by_role``), charged in one call per model reply or
step report (#22: the role's counts and the ledger's totals were two calls)."""

from __future__ import annotations

from typing import final

from regiment.models import Usage

__all__ = ("Spent",)


@final
class Spent:
    """Running totals of what was spent, and the same by role."""

    __slots__ = (
        "_roles",
        "estimated",
        "input_tokens",
        "micro_usd",
        "model_calls",
        "output_tokens",
        "tool_calls",
    )

    def __init__(self) -> None:
        self.model_calls = self.tool_calls = self.input_tokens = self.output_tokens = 0
        self.micro_usd = 0
        # role -> its usage's five counts, added up in place (no Usage made per charge)
        self._roles: dict[str, list[int]] = {}
        # Of what was charged, what is an estimate: model calls whose usage never came
        # back (cut in flight, lost with a Ray replica, in flight at a crash), each at the
        # most it could have spent (``charge_most``).
        self.estimated = Usage()

    def charge(self, role: str, usage: Usage, model_calls: int = 0, tool_calls: int = 0) -> None:
        """Charge one report's or one call's ``usage`` (with its model and tool calls)
        to the totals and to ``role``."""
        self.model_calls += model_calls
        if tool_calls:
            self.tool_calls += tool_calls
        inputs, outputs = usage.input_tokens, usage.output_tokens
        counts = self._roles.get(role)
        if counts is None:
            self._roles[role] = counts = [0, 0, 0, 0, 0]
        counts[0] += inputs
        counts[1] += outputs
        self.output_tokens += outputs
        reads, writes, micro = usage.cache_read_tokens, usage.cache_write_tokens, usage.micro_usd
        if reads or writes or micro:  # no cache and no price (most replies): no zeros added, #22
            counts[2] += reads
            counts[3] += writes
            counts[4] += micro
            self.micro_usd += micro
            inputs += reads + writes  # Usage.whole_input_tokens: cached input counts too
        self.input_tokens += inputs

    def charge_most(self, role: str, most: Usage) -> None:
        """Charge one model call whose usage never came back at ``most``, the most it
        could have spent, to ``role``: counted as spent, and as an estimate."""
        self.charge(role, most, model_calls=1)
        self.estimated = self.estimated + most

    def count_estimated(self, part: Usage) -> None:
        """Of what was charged already (a nested run's step report), ``part`` is an
        estimate: its cut calls, charged there at their most."""
        self.estimated = self.estimated + part

    def total(self) -> Usage:
        """What every role has used, added up (no ``Usage`` made and added per role)."""
        if not self._roles:
            return Usage()
        inputs, outputs, reads, writes, micro = map(sum, zip(*self._roles.values(), strict=True))
        return Usage(
            input_tokens=inputs,
            output_tokens=outputs,
            cache_read_tokens=reads,
            cache_write_tokens=writes,
            micro_usd=micro,
        )

    def by_role(self) -> dict[str, Usage]:
        """What each role has used, in the order the roles first spent."""
        return {
            role: Usage(
                input_tokens=counts[0],
                output_tokens=counts[1],
                cache_read_tokens=counts[2],
                cache_write_tokens=counts[3],
                micro_usd=counts[4],
            )
            for role, counts in self._roles.items()
        }
