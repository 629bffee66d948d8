"""The demo: the quantized digits MLP over its 450 test digits, on the default device.

Prints the accuracy, how many predictions equal cvm-runtime's (its FORMAL oracle), the gas and the time per
inference. Run it with `make demo`; `python examples/digits/demo.py --device reference` compares devices.
"""

import argparse
import sys
import time

import numpy as np

import cvmc
import cvmc.examples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="reference, cpu (default) or cuda")
    a = ap.parse_args()
    kwargs = {"device": a.device} if a.device else {}
    t0 = time.perf_counter()
    try:
        model = cvmc.examples.digits().load(**kwargs)
    except cvmc.CVMError as e:
        print(f"demo: {type(e).__name__}: {e}", file=sys.stderr)
        return e.status
    t_load = time.perf_counter() - t0
    inputs, labels = cvmc.examples.digits().test_set()
    oracle = cvmc.examples.digits().oracle_predictions()
    preds = []
    t1 = time.perf_counter()
    for x in inputs:
        out = model.infer(x.tobytes())  # the API's bytes in and out: argmax postprocess
        preds.append(int(np.frombuffer(out, "<i4")[0]))
    t_run = time.perf_counter() - t1
    preds_a = np.array(preds)
    n = len(inputs)
    print(f"digits MLP 64-64-10 on device {model.device!r}: {n} test digits")
    print(f"  accuracy            {np.mean(preds_a == labels):.2f} ({int(np.sum(preds_a == labels))}/{n})")
    print(f"  equal to runtime    {int(np.sum(preds_a == oracle))}/{n} predictions")
    print(f"  gas                 {model.gas} per inference")
    stats = model.stats
    if "read_ms" in stats:
        print(f"  load (read, verify) {stats['read_ms']:.1f} ms")
    if not stats.get("lowered", True):
        print(f"  compile             none: code from the cache, loaded in {stats['load_ms']:.1f} ms")
    elif "compile_ms" in stats or "load_ms" in stats:
        ms = stats.get("compile_ms", stats.get("load_ms"))
        print(f"  compile             {ms:.1f} ms (lowering {stats.get('lower_ms', 0):.1f} ms)")
    print(f"  in all              {t_load * 1e3:.1f} ms (load_model and the imports it makes)")
    print(f"  time per inference  {t_run / n * 1e6:.1f} us (API bytes in, bytes out)")
    return 0 if np.array_equal(preds_a, oracle) else 1


if __name__ == "__main__":
    sys.exit(main())
