"""simdgrad from Python against NumPy and PyTorch: equal results, one training step with
gradients equal to torch.autograd's, zero-copy both ways (the same data pointer), the producer's
deleter run exactly once, and errors raised with sg_last_error()'s message."""
import gc
import weakref

import numpy as np
import pytest
import simdgrad as sg

torch = pytest.importorskip("torch")
from torch.utils import dlpack as torch_dlpack  # noqa: E402


def np_ptr(a):
    return a.__array_interface__["data"][0]


def test_backend_and_version():
    assert sg.backend_name() in ("avx512", "avx2", "neon", "scalar")
    assert sg.version().count(".") == 2


def test_ops_equal_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5), dtype=np.float32)
    b = rng.standard_normal((4, 5), dtype=np.float32)
    w = rng.standard_normal((5, 3), dtype=np.float32)
    ta, tb, tw = sg.tensor(a), sg.tensor(b), sg.tensor(w)
    np.testing.assert_allclose((ta + tb).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((ta - tb * 2).numpy(), a - b * 2, rtol=1e-6)
    np.testing.assert_allclose((ta @ tw).numpy(), a @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.relu(ta).numpy(), np.maximum(a, 0))
    np.testing.assert_allclose(sg.exp(ta).numpy(), np.exp(a), rtol=1e-6)
    np.testing.assert_allclose(sg.tanh(ta).numpy(), np.tanh(a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ta.sum(axis=1).numpy(), a.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(ta.mean().item(), a.mean(), rtol=1e-5)
    np.testing.assert_allclose(ta.T.numpy(), a.T)
    assert ta.reshape(20).shape == (20,)


def test_ops_equal_torch():
    x = torch.randn(6, 10, generator=torch.Generator().manual_seed(1))
    tx = sg.from_dlpack(x)
    for ours, theirs in [(sg.softmax(tx, -1), torch.softmax(x, -1)),
                         (sg.log_softmax(tx, 1), torch.log_softmax(x, 1)),
                         (sg.sigmoid(tx), torch.sigmoid(x))]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_one_training_step_matches_torch_autograd():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 4), dtype=np.float32)
    w0 = rng.standard_normal((4, 3), dtype=np.float32)
    b0 = np.zeros(3, dtype=np.float32)
    labels = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    lr = 0.5

    tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    logits = torch.tensor(x) @ tw + tb
    tloss = -(torch.tensor(labels) * torch.log_softmax(logits, -1)).sum(-1).mean()
    tloss.backward()

    w, b = sg.tensor(w0), sg.tensor(b0)
    with sg.scope("train"):
        with sg.Tape() as tape:
            loss = sg.softmax_cross_entropy(sg.tensor(labels), sg.tensor(x) @ w + b)
            gw, gb = tape.gradient(loss, [w, b])
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-6)
    w, b = w - lr * gw, b - lr * gb
    np.testing.assert_allclose(w.numpy(), (tw - lr * tw.grad).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_zero_copy_from_and_to_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = sg.from_dlpack(a)
    assert t.data_ptr() == np_ptr(a)
    back = np.from_dlpack(t)
    assert np_ptr(back) == np_ptr(a)
    a[1, 2] = 100.0  # the producer writes: every view sees it
    assert back[1, 2] == 100.0 and t.numpy()[1, 2] == 100.0
    i = np.arange(5, dtype=np.int32)
    ti = sg.from_dlpack(i)
    assert ti.dtype == "int32" and ti.data_ptr() == np_ptr(i)


def test_zero_copy_from_and_to_torch():
    x = torch.arange(10, dtype=torch.float32)
    t = sg.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr()
    y = torch_dlpack.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    assert sg.from_dlpack(torch_dlpack.to_dlpack(x)).data_ptr() == x.data_ptr()
    z = sg.exp(t)  # a tensor simdgrad made, out to torch and back
    zt = z.torch()
    assert zt.data_ptr() == z.data_ptr()
    assert sg.from_dlpack(zt).data_ptr() == z.data_ptr()


def test_producer_deleter_runs_once():
    a = np.ones(1000, dtype=np.float32)
    ref = weakref.ref(a)  # numpy's deleter drops the array's reference
    t = sg.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None, "the simdgrad tensor holds the array"
    v = t.reshape(10, 100)
    del t
    gc.collect()
    assert ref() is not None, "a view still reads the buffer"
    del v
    gc.collect()
    assert ref() is None, "released when the last simdgrad tensor went"


def test_exported_tensor_outlives_python_handle_and_capsule_unconsumed():
    t = sg.random_normal((4, 4), seed=3)
    want = t.numpy().copy()
    arr = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(arr, want)  # the export holds a reference
    cap = sg.ones((3,)).__dlpack__()
    del cap  # never consumed: the capsule's destructor runs the deleter (no leak, no crash)
    gc.collect()


def capsule_name(cap):
    import ctypes
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return name(cap)


def test_versioned_form_when_asked_for():
    t = sg.random_normal((2, 3), seed=5)
    cap = t.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == b"dltensor_versioned"
    back = sg.from_dlpack(cap)
    assert back.data_ptr() == t.data_ptr()
    assert capsule_name(cap) == b"used_dltensor_versioned"
    assert capsule_name(t.__dlpack__()) == b"dltensor"  # no max_version: the 0.6 form
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == b"dltensor"
    del cap
    unused = sg.ones((3,)).__dlpack__(max_version=(1, 2))
    del unused  # never consumed: its destructor runs the deleter
    gc.collect()


class VersionedOnly:
    """A producer of today's protocol: answers max_version, as NumPy 2 and PyTorch 2.x do."""

    def __init__(self, t):
        self.t, self.asked = t, None

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked = max_version
        return self.t.__dlpack__(max_version=max_version, copy=copy)

    def __dlpack_device__(self):
        return (1, 0)


def test_from_dlpack_asks_for_the_versioned_form_and_copy_is_a_copy():
    t = sg.tensor([1.0, 2.0, 3.0])
    p = VersionedOnly(t)
    assert sg.from_dlpack(p).data_ptr() == t.data_ptr()
    assert p.asked == (1, 0)
    c = sg.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert c.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(c.numpy(), t.numpy())
    with pytest.raises(BufferError, match="CPU"):
        t.__dlpack__(dl_device=(2, 0))


def test_memory_limit_raises_and_leaves_the_engine_usable():
    sg.set_memory_limit(1 << 20)
    try:
        assert sg.memory_limit() == 1 << 20
        with pytest.raises(sg.Error, match="memory limit") as e:
            sg.zeros((1024, 1024, 4))
        assert e.value.status == 4  # SG_ERR_OOM
        assert sg.zeros((16,)).numel() == 16
    finally:
        sg.set_memory_limit(0)
    assert sg.zeros((1024, 1024, 4)).numel() == 1 << 22


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_unconsumed_capsule_releases_its_tensor(max_version):
    a = np.ones(64, dtype=np.float32)
    ref = weakref.ref(a)
    t = sg.from_dlpack(a)
    cap = t.__dlpack__(max_version=max_version)
    del a, t
    gc.collect()
    assert ref() is not None, "the capsule's managed tensor holds the array"
    del cap  # never consumed: the capsule's destructor must run the deleter
    gc.collect()
    assert ref() is None


def test_refusals_raise_with_the_message():
    with pytest.raises(sg.Error, match="not contiguous row-major"):
        sg.from_dlpack(np.ones((4, 4), dtype=np.float32)[:, ::2])
    with pytest.raises(sg.Error, match="64 bits is not supported"):
        sg.from_dlpack(np.ones(3))
    with pytest.raises(sg.Error, match="matmul") as e:
        sg.tensor(np.ones((2, 3))) @ sg.tensor(np.ones((2, 3)))
    assert e.value.status == 2  # SG_ERR_SHAPE
    with sg.scope("outer"):
        with pytest.raises(sg.Error, match="outer"):
            sg.reshape(sg.zeros((2, 3)), (7,))


def test_tape_closes_on_error():
    with pytest.raises(sg.Error):
        with sg.Tape():
            sg.zeros((2,)) + sg.zeros((3,))
    with sg.Tape() as tape:  # a new tape opens: the failed one was closed
        x = sg.tensor([1.0, 2.0, 3.0])
        g = tape.gradient(sg.sum(x * x), x)
    np.testing.assert_allclose(g.numpy(), [2, 4, 6])
