"""hierarchy room."""

__all__ = ()
