"""Embedding a team in an async web service (a hand-written ASGI app, no framework)."""
