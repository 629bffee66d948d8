"""Batch inference on Ray Data (the `cvmc[ray]` extra) on a local 2-CPU cluster: outputs equal a plain loop."""

import numpy as np
import pytest

import cvmc.examples


@pytest.fixture(scope="module")
def ray():
    """A local 2-CPU cluster. Ray is imported here, not at collection: importing it grows the test process by
    hundreds of MB, which the subprocesses of other tests (forked from it) would count as their peak RSS."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'cvmc[ray]')")
    pytest.importorskip("ray.data", reason="ray[data] is not installed (pip install 'cvmc[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_ray_data_equals_a_loop_of_run(ray):
    from cvmc.runtime.devices.ray_batch import predict

    d = cvmc.examples.digits()
    x = d.test_set()[0]
    ds = ray.data.from_numpy(np.array_split(x, 4))  # 4 blocks for 2 workers (no repartition task)
    rows = predict(ds, d.graph, d.params, workers=2, batch_size=100).take_all()
    assert len(rows) == len(x)
    m = d.load(device="reference")
    for r in rows:  # Ray Data keeps the order only when asked (DataContext.execution_options.preserve_order)
        assert r["output"].dtype == np.int32 and np.array_equal(r["output"], m.run(r["data"])[0])
    got = sorted(r["data"].tobytes() for r in rows)
    assert got == sorted(row.tobytes() for row in x)  # every input once
