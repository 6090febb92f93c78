"""Plans: the versioned ``Plan`` value, reading a planner's reply into steps
(JSON or numbered lines, leniently), and validating the steps (unknown worker,
unknown dependency, a cycle)."""

from regiment.hierarchy.plan._parse import ParsedPlan, parse_plan
from regiment.hierarchy.plan._plan import Plan, PlanStep
from regiment.hierarchy.plan._validate import validate_plan

__all__ = ("ParsedPlan", "Plan", "PlanStep", "parse_plan", "validate_plan")
