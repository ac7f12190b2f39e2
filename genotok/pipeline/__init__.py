"""``pretokenize``: many inputs to one corpus, resumable, in parallel batches (or on Dask).

- :mod:`~genotok.pipeline.plan`: the inputs, their kinds, record names, batches and the plan;
- :mod:`~genotok.pipeline.journal`: the output directory's lock and journal (resumption);
- :mod:`~genotok.pipeline.batch`: what one batch of inputs becomes (its part of the store,
  its journal entry);
- :mod:`~genotok.pipeline.writer`: the batches in this process (one written while the next is
  tokenized); :mod:`~genotok.pipeline.dask`: the batches on a Dask cluster;
- :mod:`~genotok.pipeline.run`: :func:`pretokenize`: the plan, then the batches, then the
  manifest and the summary.
"""

from .plan import PipelineError, expand_inputs, input_kind, record_name
from .run import RunOptions, RunSummary, pretokenize

__all__ = ["PipelineError", "RunOptions", "RunSummary", "expand_inputs", "input_kind",
           "pretokenize", "record_name"]
