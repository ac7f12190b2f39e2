"""Running :func:`genotok.pipeline.pretokenize` on Ray (``pip install 'genotok[ray]'``):
:class:`RayExecutor`.

Each batch is a Ray task (one CPU) that tokenizes its inputs and writes its own part of the store
into the output directory (a file system every node sees: NFS, Lustre, a cloud mount; or one
machine); the driver records each finished batch in the journal, exactly as the serial and Dask
runs do, so all three give the same output record for record. The tokenizer is put in Ray's
object store once (``ray.put``) and read by every task from there; a worker process runs many
tasks, and the compiled kernels are cached on disk per node (``GENOTOK_KERNEL_CACHE``, passed to
the workers of a local Ray), so a node compiles them once, not once per task.

A task whose worker dies is retried by Ray (``max_retries``); a retry that finds its shard in
place keeps it (:func:`genotok._io.place_once`) and the driver records the batch once.

Security: Ray runs pickled code sent by any client of its cluster, with no authentication by
default. ``RayExecutor(address="local")`` starts Ray on 127.0.0.1 without the dashboard; a real
cluster belongs on a private network (``docs/ray.md``).
"""

from __future__ import annotations

import os
import sys

from .._config import kernel_cache_dir
from .._optional import installed, require
from ..params import InstanceOf, Integral, Interval, validate
from .job import BatchTask, Executor, Job
from .plan import PipelineError

__all__ = ["RayExecutor"]


def _run_task(task: BatchTask, tokenizer) -> dict:
    """What a Ray worker runs (the tokenizer: from Ray's object store)."""
    return task(tokenizer)


class RayExecutor(Executor):
    """The batches as Ray tasks: ``address="local"`` starts Ray on this machine (bound to
    127.0.0.1, no dashboard, ``num_workers`` CPUs) at the first run and stops it in
    :meth:`close`; any other address (``"auto"``, ``"ray://head:10001"``, ``"head:6379"``) joins
    a running cluster. A Ray already initialized in this process is used as it is (and left
    running). At most ``num_workers`` batches run at a time; ``max_retries``: how often Ray runs a
    task again whose worker died.

    Examples
    --------
    >>> RayExecutor(address="local", num_workers=2)
    RayExecutor(address='local', num_workers=2, max_retries=3)
    >>> RayExecutor(num_workers=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: RayExecutor: num_workers must be an integer in [1, inf), got 0
    """

    name = "ray"
    CONSTRAINTS = {"address": [InstanceOf(str)],
                   "num_workers": [Interval(Integral, 1, None)],
                   "max_retries": [Interval(Integral, 0, None)]}

    def __init__(self, address: str = "local", num_workers: int = 2, max_retries: int = 3):
        validate({"address": address, "num_workers": num_workers, "max_retries": max_retries},
                 self.CONSTRAINTS, "RayExecutor")
        installed("ray", "executor='ray'")  # now, before a run writes anything
        self.address, self.num_workers = address, int(num_workers)
        self.max_retries = int(max_retries)
        self._started = False

    def options(self) -> dict:
        return {"address": self.address, "num_workers": self.num_workers,
                "max_retries": self.max_retries}

    def _ray(self):
        if self.address == "local" and "ray" not in sys.modules:
            # Ray resolves 127.0.0.1 to the machine's address (and binds its servers there)
            # unless clusters are off: a local Ray then stays on the loopback interface
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        ray = require("ray", "executor='ray'")
        if not ray.is_initialized():
            env = {} if kernel_cache_dir() is None else {"GENOTOK_KERNEL_CACHE":
                                                           kernel_cache_dir()}
            if os.environ.get("PYTHONPATH"):
                env["PYTHONPATH"] = os.environ["PYTHONPATH"]
            if self.address == "local":
                ray.init(num_cpus=self.num_workers, include_dashboard=False,
                         _node_ip_address="127.0.0.1", log_to_driver=False,
                         runtime_env={"env_vars": env})
                self._started = True
                if ray.util.get_node_ip_address() not in ("127.0.0.1", "::1"):
                    ray.shutdown()
                    self._started = False
                    raise PipelineError(
                        "RayExecutor(address='local'): Ray bound to the machine's network "
                        "address, not 127.0.0.1 (ray was imported before genotok could keep it "
                        "on the loopback interface); set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 "
                        "before importing ray, or start Ray yourself")
            else:
                ray.init(address=self.address, log_to_driver=False)
                self._started = True
        return ray

    def run(self, job: Job) -> None:
        todo = job.pending()
        if not todo:
            return
        ray = self._ray()
        remote = ray.remote(num_cpus=1, max_retries=self.max_retries)(_run_task)
        tok = ray.put(job.tokenizer)
        waiting: dict = {}
        queue = list(reversed(todo))
        try:
            while queue or waiting:
                while queue and len(waiting) < self.num_workers:
                    b = queue.pop()
                    waiting[remote.remote(job.task(b), tok)] = b
                ready, _ = ray.wait(list(waiting), num_returns=1)
                for ref in ready:
                    b = waiting.pop(ref)
                    job.record(b, _result(ray, ref))
        finally:
            for ref in waiting:
                ray.cancel(ref, force=False)

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


def _result(ray, ref):
    """A task's result; its own error (a bad input: a GenotokError naming it) raised as such."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise
    except ray.exceptions.WorkerCrashedError as exc:  # every retry's worker died
        raise PipelineError(f"a Ray worker died running a batch, {exc}; re-run to resume") \
            from None
