"""models room."""

__all__ = ()
