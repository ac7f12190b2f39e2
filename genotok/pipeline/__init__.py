"""``pretokenize``: many inputs to one corpus, resumable, in parallel batches (or on Dask).

- :mod:`~genotok.pipeline.plan`: the inputs, their kinds, record names, batches and the plan;
- :mod:`~genotok.pipeline.journal`: the output directory's lock and journal (resumption);
- :mod:`~genotok.pipeline.run`: :func:`pretokenize`, running the batches, the summary;
- :mod:`~genotok.pipeline.dask`: the batches on a Dask cluster (given the run's batch runner).
"""

from .plan import PipelineError, expand_inputs, input_kind, record_name
from .run import RunOptions, RunSummary, pretokenize

__all__ = ["PipelineError", "RunOptions", "RunSummary", "expand_inputs", "input_kind",
           "pretokenize", "record_name"]
