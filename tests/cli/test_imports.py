"""``regiment validate`` loads only what it needs: no model SDK, no trace exporter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
from regiment.cli import main
code = main(sys.argv[1:])
heavy = ("anthropic", "opentelemetry.exporter.otlp.proto.http", "google.protobuf")
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def _probe(*argv: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_validate_does_not_import_the_anthropic_sdk() -> None:
    # The refund team names Claude models; validating it must still not load the SDK.
    assert "anthropic:" in (ROOT / "examples/refund/team.toml").read_text(encoding="utf-8")
    assert _probe("validate", "examples/refund/team.toml") == {"code": 0, "loaded": []}


def test_the_probe_sees_a_module_that_is_imported() -> None:
    # The same probe, after something imports the SDK, reports it: the test above can fail.
    done = subprocess.run(
        [sys.executable, "-c", "import regiment.models._anthropic\n" + PROBE, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"code": 0, "loaded": ["anthropic"]}
