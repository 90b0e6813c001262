"""Profiling a pipeline outside a job: what ``grizzly explain --variant optimized`` shows.

A running job profiles a pipeline with its instrumented variant and specializes the optimized one
from the profile (``adaptive.py``). ``profile_offline`` does the same ahead of time, over the
first records of the pipeline's source, with a kernel of its own.
"""

from __future__ import annotations

from dataclasses import replace

from ..codegen import abi
from ..codegen.module import CodegenOptions, generate_pipeline
from ..codegen.profile import Profile
from ..codegen.specialize import Specialization, specialize
from .adaptive import AdaptiveSettings
from .kernel_table import make_kernel
from .kernels import ProjectKernel


def profile_offline(pipeline, batches, records: int = AdaptiveSettings.profile_records,
                    base: CodegenOptions | None = None) -> tuple[Profile, Specialization]:
    """Run the instrumented variant of ``pipeline`` (which reads a source) over the first
    ``records`` records of ``batches`` and return the profile with the specialization it leads
    to (what the optimized variant would be)."""
    base = base or CodegenOptions()
    gen = generate_pipeline(pipeline, replace(base, variant="instrumented"))
    project = pipeline.terminal.kind == "project"
    kernel = ProjectKernel(gen, "profile") if project else make_kernel(gen, "profile")
    try:
        kernel.reset_profiles()
        seen = 0
        for batch in batches:
            if seen >= records:
                break
            batch = batch.slice(0, records - seen)
            if project:
                kernel.process(batch)
            else:
                kernel.process(batch, abi.INT64_MIN)
            seen += batch.num_rows
        profile = kernel.read_profile()
        profile.sample_every = gen.options.profile_sample
    finally:
        kernel.close()
    entry = getattr(gen.grouping, "entry_size", 0) or 0
    return profile, specialize(pipeline, profile, base, entry)


__all__ = ["profile_offline"]
