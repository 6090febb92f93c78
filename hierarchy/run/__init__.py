"""The run: one planner actor per run, made of named parts.

``_actor.PlannerActor`` routes its messages to ``RunBook`` (the run's state:
``PlanVersions``, ``Dispatcher``, ``Rounds``, ``Spending``), ``PhaseCalls``
(planner-side model calls), ``Prompting`` (what those calls ask),
``Verifier`` (step checks) and ``RunTrace`` (the run span). Every state change
is a ``RunChange`` (``_changes``) that goes through ``PlannerActor._record``.

Nothing here is public API; this package imports nothing on its own, so the
modules that need one of its parts import that module directly.
"""

__all__ = ()
