"""``python -m regiment``: the command-line interface."""

from regiment.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
