"""A program of a user's that embeds the service: ``regiment.serve.serve_command`` called
with no ``stop``, so it stops on SIGINT or SIGTERM itself.

    python embedded.py serve TEAM_FILE --port P --app-dir DIR [--journal J]

(the arguments of ``regiment serve`` that ``cli_serving.serving`` passes). Once the call
has returned it says so, with the code it returned, and exits with that code.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from regiment.config import load_team
from regiment.serve import serve_command


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("team_file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--app-dir", required=True)
    parser.add_argument("--journal")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.app_dir)  # the team file's brain
    options = argparse.Namespace(
        host="127.0.0.1",
        port=args.port,
        token=None,
        journal=args.journal,
        keep_runs=None,
        lease_ttl=None,
        verbose=0,
    )
    team = load_team(args.team_file)
    return await serve_command(team, options, environ={}, stderr=sys.stderr)


if __name__ == "__main__":
    code = anyio.run(main, sys.argv[1:])
    print(f"serve_command returned {code}", file=sys.stderr, flush=True)
    sys.exit(code)
