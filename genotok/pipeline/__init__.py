"""``pretokenize``: many inputs to one corpus, resumable, in parallel batches (or on Dask)."""

from .run import PipelineError, RunSummary, expand_inputs, input_kind, pretokenize, record_name

__all__ = ["PipelineError", "RunSummary", "expand_inputs", "input_kind", "pretokenize",
           "record_name"]
