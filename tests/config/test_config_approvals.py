"""Team files declare approvals: ``[[workers]] require_approval`` and ``approval_timeout``."""

from __future__ import annotations

import pytest

from regiment.config import build_team, parse_config
from regiment.errors import ConfigError
from regiment.hierarchy import Worker
from regiment.models import ScriptedModel

from .test_config import GOOD


def _with(extra: str) -> str:
    billing_end = '"examples.refund.tools:flag_exception"]'  # the end of the billing worker
    return GOOD.replace(billing_end, billing_end + "\n" + extra, 1)


def test_require_approval_marks_the_named_tools_of_that_worker() -> None:
    text = _with('require_approval = ["issue_refund"]\napproval_timeout = 3600')
    team = build_team(parse_config(text, format="toml"), model=ScriptedModel(["unused"]))
    billing, comms = team.workers
    assert isinstance(billing, Worker)
    assert isinstance(comms, Worker)
    refund = billing.toolset.get("issue_refund")
    check = billing.toolset.get("check_eligibility")
    assert refund is not None
    assert check is not None
    assert refund.requires_approval
    assert not check.requires_approval
    assert billing.approval_timeout == 3600
    assert comms.approval_timeout is None


def test_an_unknown_tool_name_is_a_config_error_that_names_it() -> None:
    text = _with('require_approval = ["issue_refunds"]')
    with pytest.raises(ConfigError) as caught:
        build_team(parse_config(text, format="toml"), model=ScriptedModel([]))
    message = str(caught.value)
    assert "workers[0]: worker 'billing'" in message
    assert "require_approval" in message
    assert "no tool 'issue_refunds'" in message
    assert "check_eligibility, flag_exception, issue_refund" in message


def test_a_bad_approval_timeout_names_its_key() -> None:
    text = _with("approval_timeout = -1")
    with pytest.raises(ConfigError, match=r"workers\[0\]\.approval_timeout: must be"):
        build_team(parse_config(text, format="toml"), model=ScriptedModel([]))
