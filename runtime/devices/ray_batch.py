"""Batch inference over a data set on Ray Data (`pip install '.[ray]'` in the cvmc checkout).

    import ray, cvmc.examples
    from cvmc.runtime.devices.ray_batch import CvmPredictor, predict

    d = cvmc.examples.digits()
    ds = ray.data.from_numpy(d.test_set()[0])                  # a column "data": one input per row
    out = predict(ds, d.graph, d.params, workers=2)            # a column "output" added: the first head
    # or by hand: ds.map_batches(CvmPredictor, fn_constructor_kwargs={"graph": ..., "params": ...},
    #                            compute=ray.data.ActorPoolStrategy(size=2), batch_size=256)

Each worker is an actor that loads (verifies and compiles, from the cache when it can) the model once, then runs
every batch it is given through `Model.run_batch`. The files are read once, here, and shipped as bytes, so the
workers need not see this machine's folders. Rows come back in the data set's order; the outputs equal a loop
of `Model.run` (the same code on the same bits).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def _bytes(source: bytes | str | os.PathLike[str]) -> bytes:
    if isinstance(source, bytes):
        return source
    with open(source, "rb") as f:
        return f.read()


class CvmPredictor:
    """A Ray Data `map_batches` class: loads the model once per worker, then maps a batch's `column` (a stack of
    inputs) to `output` (the first head) or, with several heads, `output0`, `output1`, ..."""

    def __init__(self, graph: bytes | str | os.PathLike[str], params: bytes | str | os.PathLike[str],
                 device: str = "cpu", threads: int = 1, column: str = "data"):
        from cvmc.runtime.model import load_model

        self.model = load_model(_bytes(graph), _bytes(params), device=device, threads=threads)
        self.column = column

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outs = self.model.run_batch(batch[self.column])
        result = dict(batch)
        if len(outs) == 1:
            result["output"] = outs[0]
        else:
            result.update({f"output{i}": o for i, o in enumerate(outs)})
        return result


def predict(dataset: Any, graph: bytes | str | os.PathLike[str], params: bytes | str | os.PathLike[str], *,
            workers: int = 1, device: str = "cpu", threads: int = 1, column: str = "data",
            batch_size: int = 256) -> Any:
    """`dataset` with the model's output added to each row, computed by `workers` actors (lazy, as Ray Data is:
    iterate, `take_all` or write the result to run it)."""
    import ray.data

    return dataset.map_batches(
        CvmPredictor,
        fn_constructor_kwargs={"graph": _bytes(graph), "params": _bytes(params), "device": device,
                               "threads": threads, "column": column},
        compute=ray.data.ActorPoolStrategy(size=workers),
        batch_size=batch_size,
        batch_format="numpy",
    )
