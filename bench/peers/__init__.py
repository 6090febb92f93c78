"""The peers' side of the benchmark rows; each module runs only in bench/.venv-peers."""
