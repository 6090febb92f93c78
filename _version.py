"""The package's version: one constant, read by ``regiment.__version__`` and by
telemetry's instrumentation scope (kept equal to ``pyproject.toml``'s by a test)."""

__all__ = ("__version__",)

__version__ = "0.1.0"
