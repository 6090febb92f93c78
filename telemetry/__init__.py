"""telemetry room."""

__all__ = ()
