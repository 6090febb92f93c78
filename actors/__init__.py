"""actors room."""

__all__ = ()
