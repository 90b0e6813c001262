"""Physical planning: logical plan -> pipelines."""

from .pipelines import PhysicalPlan, Pipeline, build_physical_plan

__all__ = ["PhysicalPlan", "Pipeline", "build_physical_plan"]
