"""The lowering rules, declared in one ordered table (``RULES``): the first rule whose terminal
and window kind match a pipeline lowers it. A rule is a function of the public lowering API
(``lowering.py``): ``(pipeline, options, ctx, emitter, gen) -> (KernelCode, state IR)``.

Join pipelines are generated whole by ``join.py`` (both sides' kernels and their shared trigger).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..physical.pipelines import Pipeline, ProjectTerminal, WindowTerminal
from ..windows import (COUNT, CUMULATIVE, RUNNING, SESSION, SLIDING, SLIDING_PROCESSING, TUMBLING, TUMBLING_PROCESSING,
                       WindowKind)
from .count_window import lower_count_window
from .expr_emitter import EmitContext, ExprEmitter
from .generated import GeneratedPipeline, KernelCode
from .options import CodegenOptions
from .project import lower_project
from .running_aggregate import lower_running_aggregate
from .session_window import lower_session_window
from .shared_window import lower_shared_time_window
from .sort_grouping import lower_sort_window, sort_grouping_applies
from .time_window import lower_time_window

LoweringRule = Callable[[Pipeline, CodegenOptions, EmitContext, ExprEmitter, GeneratedPipeline],
                        tuple[KernelCode, str]]


def lower_event_time_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext, emitter: ExprEmitter,
                            gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Tumbling, sliding and cumulative event-time windows: sort grouping, one shared state, or
    thread-local hash tables, as the options ask."""
    if sort_grouping_applies(pipeline, options):
        return lower_sort_window(pipeline, options, ctx, emitter, gen)
    if options.window_state == "shared":
        return lower_shared_time_window(pipeline, options, ctx, emitter, gen)
    return lower_time_window(pipeline, options, ctx, emitter, gen)


def lower_processing_time_window(pipeline: Pipeline, options: CodegenOptions, ctx: EmitContext,
                                 emitter: ExprEmitter, gen: GeneratedPipeline) -> tuple[KernelCode, str]:
    """Tumbling and sliding processing-time windows: sort grouping or thread-local hash tables."""
    if sort_grouping_applies(pipeline, options):
        return lower_sort_window(pipeline, options, ctx, emitter, gen)
    return lower_time_window(pipeline, options, ctx, emitter, gen)


@dataclass(frozen=True)
class Rule:
    terminal: type             # the pipeline's terminal class
    window_kinds: tuple[WindowKind, ...]  # window terminals: the kinds it lowers
    lower: LoweringRule


RULES: tuple[Rule, ...] = (
    Rule(ProjectTerminal, (), lower_project),
    Rule(WindowTerminal, (TUMBLING, SLIDING, CUMULATIVE), lower_event_time_window),
    Rule(WindowTerminal, (TUMBLING_PROCESSING, SLIDING_PROCESSING), lower_processing_time_window),
    Rule(WindowTerminal, (SESSION,), lower_session_window),
    Rule(WindowTerminal, (COUNT,), lower_count_window),
    Rule(WindowTerminal, (RUNNING,), lower_running_aggregate),
)


def rule_for(pipeline: Pipeline) -> LoweringRule:
    """The rule that lowers ``pipeline``; ``NotImplementedError`` when none does."""
    t = pipeline.terminal
    for rule in RULES:
        if isinstance(t, rule.terminal) and (rule.terminal is not WindowTerminal
                                             or t.assigner.kind in rule.window_kinds):
            return rule.lower
    what = repr(t.assigner) if isinstance(t, WindowTerminal) else t.kind
    raise NotImplementedError(f"the compiled engine has no lowering for {what} yet")
