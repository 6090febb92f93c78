"""What a team file path may be: a regular file of at most ``MAX_BYTES``. A FIFO held
``regiment validate`` (and ``run``) for ever, waiting for a writer; /dev/zero was read
until memory ran out (a ``MemoryError`` traceback); a 50 MB file took the parsers over
a minute and 6 GB."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from regiment.config import load_config
from regiment.config._text import MAX_BYTES
from regiment.errors import ConfigError

TEAM = 'name = "t"\nbrain = "examples.refund.brain:refund_brain"\n\n[[workers]]\nname = "w"\ndescription = "d"\n'
NOT_REGULAR = (
    "cannot read the team file: it is not a regular file (a pipe or a device, say); give "
    "the path of the .toml or .yaml file itself"
)


def _validate(team: Path) -> subprocess.CompletedProcess[str]:
    """``regiment validate team`` in a child with 1 GB of address space at most."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run(
        [sys.executable, "-m", "regiment", "validate", str(team)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limited,
    )


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "team.toml"
    os.mkfifo(fifo)
    done = _validate(fifo)  # it timed out: opening a FIFO waits for a writer
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == f"regiment: error: {fifo}: {NOT_REGULAR}"


def test_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    zero = tmp_path / "team.toml"
    zero.symlink_to("/dev/zero")
    done = _validate(zero)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == f"regiment: error: {zero}: {NOT_REGULAR}"
    assert "Traceback" not in done.stderr


def test_a_file_past_the_limit_is_refused_unparsed(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(TEAM + "#" * MAX_BYTES, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(team)
    assert str(caught.value) == (
        f"{team}: the team file is larger than 1,048,576 bytes; a team file is a few KB of "
        "TOML or YAML: check that this is the file you meant"
    )


def test_a_file_at_the_limit_and_a_link_to_a_file_are_read(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    padding = "#" * (MAX_BYTES - len(TEAM.encode()) - 1) + "\n"
    team.write_text(TEAM + padding, encoding="utf-8")
    assert team.stat().st_size == MAX_BYTES
    assert load_config(team).name == "t"
    link = tmp_path / "link.toml"
    link.symlink_to(team)
    assert load_config(link).workers[0].name == "w"


def test_a_directory_still_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "team.toml"
    folder.mkdir()
    said = r"cannot read the team file: Is a directory; give the path of the \.toml or \.yaml file in it$"
    with pytest.raises(ConfigError, match=said):
        load_config(folder)
