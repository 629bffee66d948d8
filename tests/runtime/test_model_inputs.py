"""Inputs checked by shape (issue 39): `run` and `run_batch` take the input's shape, the shape without its
leading 1s, or its values flat, and refuse every other shape of the same size (an NHWC image for an NCHW model ran
and returned other logits); uint8 data above the input's precision is refused, not saturated; `run_batch`'s
replica count is `replicas` (`threads=` a deprecated alias)."""

import re

import numpy as np
import pytest

import cvmc
import cvmc.examples

CNN = cvmc.examples.digits_cnn()  # input (1, 1, 8, 8), precision 8
DIGITS = cvmc.examples.digits()  # input (1, 64)


@pytest.fixture(scope="module")
def cnn():
    return CNN.load(device="reference")


@pytest.fixture(scope="module")
def x():
    return CNN.test_set()[0][:3]


@pytest.mark.parametrize("shape", [(1, 1, 8, 8), (1, 8, 8), (8, 8), (64,)])
def test_the_accepted_shapes_run_alike(cnn, x, shape):
    assert np.array_equal(cnn.run(x[0].reshape(shape))[0], cnn.run(x[0])[0])


@pytest.mark.parametrize("shape", [(1, 8, 8, 1), (8, 8, 1), (1, 64), (2, 32), (64, 1), (1, 1, 1, 64)])
def test_another_shape_of_the_same_size_is_refused(cnn, x, shape):
    want = re.escape("shape [1, 1, 8, 8]") + ".*" + re.escape(f"got {list(shape)}")
    with pytest.raises(cvmc.CVMLogicError, match=want):
        cnn.run(x[0].reshape(shape))


@pytest.mark.parametrize("shape", [(3, 1, 1, 8, 8), (3, 1, 8, 8), (3, 8, 8), (3, 64)])
def test_a_batch_of_the_accepted_shapes(cnn, x, shape):
    assert np.array_equal(cnn.run_batch(x.reshape(shape))[0], np.stack([cnn.run(r)[0] for r in x]))


@pytest.mark.parametrize("shape", [(3, 8, 8, 1), (3, 1, 1, 64), (192,), (1, 192), (3, 1, 64)])
def test_a_batch_of_another_shape_is_refused(cnn, x, shape):
    with pytest.raises(cvmc.CVMLogicError, match=r"stack of N inputs, each of shape \[1, 1, 8, 8\]"):
        cnn.run_batch(x.reshape(shape))


def test_the_message_names_both_shapes(cnn, x):
    with pytest.raises(cvmc.CVMLogicError) as e:
        cnn.run(x[0].reshape(1, 8, 8, 1))
    assert str(e.value) == ("expected an input of shape [1, 1, 8, 8] (or without its leading 1s or its 64 values "
                            "flat), got [1, 8, 8, 1]")


def test_the_digits_row_of_the_readme_runs():
    m = DIGITS.load(device="reference")
    row = DIGITS.test_set()[0][0]
    assert row.shape == (64,) and np.array_equal(m.run(row)[0], m.run(row.reshape(1, 64))[0])


def test_uint8_saturating_is_refused_at_the_bound(cnn):
    ok = np.full((1, 1, 8, 8), 127, np.uint8)  # the bound: runs
    assert np.array_equal(cnn.run(ok)[0], cnn.run(ok.astype(np.int8))[0])
    with pytest.raises(cvmc.CVMLogicError, match=r"uint8 input values in \[0, 127\].*got 128.*saturate"):
        cnn.run(np.full((1, 1, 8, 8), 128, np.uint8))  # one past it
    with pytest.raises(cvmc.CVMLogicError, match="got 255"):
        cnn.run_batch(np.full((2, 1, 1, 8, 8), 255, np.uint8))
    # signed data saturates on purpose, as the runtime does
    assert np.array_equal(cnn.run(np.full((1, 1, 8, 8), 300, np.int16))[0], cnn.run(ok.astype(np.int8))[0])


def test_run_batch_replicas_and_the_old_keyword(x):
    m = CNN.load(device="cpu", threads=1)
    want = np.stack([m.run(r)[0] for r in x])
    assert np.array_equal(m.run_batch(x, replicas=2)[0], want)
    with pytest.warns(DeprecationWarning, match="replicas"):
        assert np.array_equal(m.run_batch(x, threads=2)[0], want)
    for bad in (0, True, 1.5):
        with pytest.raises(cvmc.CVMLogicError, match="'replicas'"):
            m.run_batch(x, replicas=bad)
