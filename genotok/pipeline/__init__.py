"""``pretokenize``: many inputs to one corpus, resumable, in parallel batches (or on Dask).

- :mod:`~genotok.pipeline.plan`: the inputs, their kinds, record names, batches and the plan;
- :mod:`~genotok.pipeline.journal`: the output directory's lock and journal (resumption);
- :mod:`~genotok.pipeline.batch`: what one batch of inputs becomes (its part of the store,
  its journal entry);
- :mod:`~genotok.pipeline.job`: the executor seam (a run's batches as an engine drives them);
  :mod:`~genotok.pipeline.writer`: the batches in this process (one written while the next is
  tokenized); :mod:`~genotok.pipeline.dask`, :mod:`~genotok.pipeline.ray`: on a Dask or Ray
  cluster; :mod:`~genotok.pipeline.executors`: the executors by name (and plugins);
- :mod:`~genotok.pipeline.run`: :func:`pretokenize`: the plan, then the batches, then the
  manifest and the summary.
"""

from .dask import DaskExecutor
from .executors import EXECUTORS, get_executor, register_executor
from .job import BatchTask, Executor, Job
from .plan import PipelineError, expand_inputs, input_kind, record_name
from .ray import RayExecutor
from .run import RunOptions, RunSummary, pretokenize
from .writer import SerialExecutor

__all__ = ["EXECUTORS", "BatchTask", "DaskExecutor", "Executor", "Job", "PipelineError",
           "RayExecutor", "RunOptions", "RunSummary", "SerialExecutor", "expand_inputs",
           "get_executor", "input_kind", "pretokenize", "record_name", "register_executor"]
