"""A script's parts given the wrong kind of value fail at once, as ``ConfigError``s that
say what to give, not as a ``TypeError`` deep inside (``ScriptedModel(None)``) or a
reply with no text in it that failed later, elsewhere (``text_response(None)``)."""

from __future__ import annotations

import pytest

from regiment import ScriptedModel, text_response
from regiment.errors import ConfigError


@pytest.mark.parametrize("script", [None, 42, {"planner": "x"}])
def test_a_script_that_is_neither_replies_nor_a_function(script: object) -> None:
    with pytest.raises(ConfigError) as caught:
        ScriptedModel(script)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "ScriptedModel's script must be a list of replies or a function of the request; "
        f"got {type(script).__name__}: e.g. ScriptedModel(['the answer'])"
    )


@pytest.mark.parametrize("text", [None, 7, b"bytes"])
def test_a_text_reply_takes_text(text: object) -> None:
    with pytest.raises(ConfigError) as caught:
        text_response(text)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"text_response(text) takes the reply's text (a str); got {type(text).__name__}"
    )
