"""Code generation: physical pipelines -> LLVM IR text (rendered from codegen_templates/)."""

from .module import GeneratedPipeline, generate_pipeline

__all__ = ["GeneratedPipeline", "generate_pipeline"]
