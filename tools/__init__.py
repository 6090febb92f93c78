"""Typed Python callables as worker tools."""

from regiment.tools._definition import ToolDefinition

__all__ = ("ToolDefinition",)
