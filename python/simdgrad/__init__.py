"""simdgrad from Python: tensors, ops, scopes and the tape over libsimdgrad's C API (ctypes).

Tensors cross to and from NumPy and PyTorch without a copy through DLPack:
``np.from_dlpack(t)``, ``torch.utils.dlpack.from_dlpack(t)``, ``simdgrad.from_dlpack(array)``.
A Tensor owns one reference to its C tensor and drops it when Python collects it; scopes name
the work (errors carry the scope path) but do not dispose Python's tensors. Every failure raises
simdgrad.Error with sg_last_error()'s message.

The library is found through SIMDGRAD_LIBRARY (a path to libsimdgrad.so.1), then the build
folder of the source tree this package sits in (build/), then the loader's search path.
"""

import builtins
import ctypes
import ctypes.util
import os

__all__ = [
    "Error", "Tensor", "Tape", "scope", "backend_name", "version", "set_memory_limit",
    "memory_limit", "tensor", "from_dlpack",
    "zeros", "ones", "fill", "scalar", "random_uniform", "random_normal",
    "add", "sub", "mul", "div", "matmul", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
    "sum", "mean", "max", "softmax", "log_softmax", "softmax_cross_entropy", "reshape",
    "transpose", "one_hot", "cast", "F32", "I32", "BOOL",
]

F32, I32, BOOL = 0, 1, 2
_MAX_RANK = 8


def _find_library():
    path = os.environ.get("SIMDGRAD_LIBRARY")
    if path:
        return path
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    built = os.path.join(root, "build", "libsimdgrad.so.1")
    if os.path.exists(built):
        return built
    found = ctypes.util.find_library("simdgrad")
    if found:
        return found
    raise ImportError("simdgrad: libsimdgrad.so.1 not found; set SIMDGRAD_LIBRARY to its path")


_lib = ctypes.CDLL(_find_library())
_T = ctypes.c_void_p  # sg_tensor *
_I64P = ctypes.POINTER(ctypes.c_int64)


# ---- DLPack's structs (dlpack/dlpack.h, 0.6) -------------------------------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", _I64P), ("strides", _I64P),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DLDeleter)]


# DLPack 1.x's versioned form: the version first, so a consumer can refuse a major it does not
# know before reading anything else.
class _DLManagedTensorVersioned(ctypes.Structure):
    pass


_DLDeleterVersioned = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensorVersioned))
_DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                      ("manager_ctx", ctypes.c_void_p),
                                      ("deleter", _DLDeleterVersioned),
                                      ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]
_DL_FLAG_IS_COPIED = 1 << 1


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_c = type("_C", (), {})()
for _name, _res, _args in [
    ("sg_version_string", ctypes.c_char_p, ()),
    ("sg_backend_name", ctypes.c_char_p, ()),
    ("sg_last_error", ctypes.c_char_p, ()),
    ("sg_last_status", ctypes.c_int, ()),
    ("sg_clear_error", None, ()),
    ("sg_set_memory_limit", None, (ctypes.c_int64,)),
    ("sg_memory_limit", ctypes.c_int64, ()),
    ("sg_rank", ctypes.c_int, (_T,)),
    ("sg_shape", _I64P, (_T,)),
    ("sg_numel", ctypes.c_int64, (_T,)),
    ("sg_dtype_of", ctypes.c_int, (_T,)),
    ("sg_dispose", None, (_T,)),
    ("sg_keep", _T, (_T,)),
    ("sg_scope_begin", None, (ctypes.c_char_p,)),
    ("sg_scope_end", None, (ctypes.c_void_p, ctypes.c_int)),
    ("sg_tape_begin", ctypes.c_int, ()),
    ("sg_tape_end", ctypes.c_int, (_T, _T, ctypes.POINTER(_T), ctypes.c_int, ctypes.POINTER(_T))),
    ("sg_tape_active", ctypes.c_bool, ()),
    ("sg_tensor_f32", _T, (ctypes.c_void_p, _I64P, ctypes.c_int)),
    ("sg_scalar", _T, (ctypes.c_float,)),
    ("sg_zeros", _T, (_I64P, ctypes.c_int)),
    ("sg_ones", _T, (_I64P, ctypes.c_int)),
    ("sg_fill", _T, (_I64P, ctypes.c_int, ctypes.c_float)),
    ("sg_random_uniform", _T, (_I64P, ctypes.c_int, ctypes.c_float, ctypes.c_float,
                               ctypes.c_uint64)),
    ("sg_random_normal", _T, (_I64P, ctypes.c_int, ctypes.c_float, ctypes.c_float,
                              ctypes.c_uint64)),
    ("sg_matmul", _T, (_T, _T, ctypes.c_bool, ctypes.c_bool)),
    ("sg_softmax", _T, (_T, ctypes.c_int)),
    ("sg_log_softmax", _T, (_T, ctypes.c_int)),
    ("sg_softmax_cross_entropy", _T, (_T, _T)),
    ("sg_reshape", _T, (_T, _I64P, ctypes.c_int)),
    ("sg_transpose", _T, (_T, ctypes.POINTER(ctypes.c_int))),
    ("sg_one_hot", _T, (_T, ctypes.c_int)),
    ("sg_cast", _T, (_T, ctypes.c_int)),
    ("sg_to_dlpack", ctypes.POINTER(_DLManagedTensor), (_T,)),
    ("sg_from_dlpack", _T, (ctypes.POINTER(_DLManagedTensor),)),
    ("sg_to_dlpack_versioned", ctypes.POINTER(_DLManagedTensorVersioned), (_T,)),
    ("sg_from_dlpack_versioned", _T, (ctypes.POINTER(_DLManagedTensorVersioned),)),
    ("sg_tensor_i32", _T, (ctypes.c_void_p, _I64P, ctypes.c_int)),
    ("sg_tensor_bool", _T, (ctypes.c_void_p, _I64P, ctypes.c_int)),
]:
    setattr(_c, _name, _fn(_name, _res, *_args))
for _name in ("neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu"):
    setattr(_c, "sg_" + _name, _fn("sg_" + _name, _T, _T))
for _name in ("add", "sub", "mul", "div"):
    setattr(_c, "sg_" + _name, _fn("sg_" + _name, _T, _T, _T))
for _name in ("sum", "mean", "max"):
    setattr(_c, "sg_" + _name, _fn("sg_" + _name, _T, _T, ctypes.POINTER(ctypes.c_int),
                                   ctypes.c_int, ctypes.c_bool))


class Error(RuntimeError):
    """A simdgrad call failed: str(e) is sg_last_error(), e.status the sg_status number."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def _raise():
    msg = (_c.sg_last_error() or b"").decode("utf-8", "replace")
    status = _c.sg_last_status()
    _c.sg_clear_error()
    raise Error(msg or "simdgrad: call failed", status)


def _wrap(handle):
    """A Tensor owning the new C reference handle (taken out of C scope tracking)."""
    if not handle:
        _raise()
    return Tensor._own(_c.sg_keep(handle))


def _shape_arg(shape):
    shape = tuple(int(d) for d in shape)
    return (ctypes.c_int64 * builtins.max(len(shape), 1))(*shape), len(shape)


def _axes_arg(axis):
    if axis is None:
        return None, 0
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return (ctypes.c_int * len(axes))(*axes), len(axes)


# ---- PyCapsules through the C API (their own handles: argtypes differ per use) ---------------
_py = ctypes.PyDLL(None)
_capsule_new = _py["PyCapsule_New"]
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = _py["PyCapsule_GetPointer"]
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = _py["PyCapsule_SetName"]
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_valid = _py["PyCapsule_IsValid"]
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
# In the destructor the capsule is dying: pass it as a plain pointer, never as a py_object.
_capsule_valid_raw = _py["PyCapsule_IsValid"]
_capsule_valid_raw.restype = ctypes.c_int
_capsule_valid_raw.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer_raw = _py["PyCapsule_GetPointer"]
_capsule_pointer_raw.restype = ctypes.c_void_p
_capsule_pointer_raw.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_DLTENSOR = b"dltensor"  # these bytes outlive every capsule: names are not copied
_USED_DLTENSOR = b"used_dltensor"
_DLTENSOR_VERSIONED = b"dltensor_versioned"
_USED_DLTENSOR_VERSIONED = b"used_dltensor_versioned"


def _destructor_for(name, managed):
    """A PyCapsule destructor for capsules of `name` holding a `managed` pointer. Never consumed
    (still `name`): the managed tensor is ours to delete. A consumer that took it renamed the
    capsule and calls the deleter itself."""
    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def destructor(capsule):
        if _capsule_valid_raw(capsule, name):
            m = ctypes.cast(_capsule_pointer_raw(capsule, name), ctypes.POINTER(managed))
            if m.contents.deleter:
                m.contents.deleter(m)
    return destructor


_capsule_destructor = _destructor_for(_DLTENSOR, _DLManagedTensor)
_capsule_destructor_versioned = _destructor_for(_DLTENSOR_VERSIONED, _DLManagedTensorVersioned)


class Tensor:
    """One reference to a simdgrad tensor. Operators: + - * / @ and unary -."""

    __slots__ = ("_h", "__weakref__")

    @classmethod
    def _own(cls, handle):
        t = cls.__new__(cls)
        t._h = handle
        return t

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and _c is not None:
            _c.sg_dispose(h)

    @property
    def shape(self):
        p = _c.sg_shape(self._h)
        return tuple(p[i] for i in range(_c.sg_rank(self._h)))

    @property
    def ndim(self):
        return _c.sg_rank(self._h)

    @property
    def dtype(self):
        return ("float32", "int32", "bool")[_c.sg_dtype_of(self._h)]

    def numel(self):
        return _c.sg_numel(self._h)

    def data_ptr(self):
        """The address of the first element (shared with NumPy / PyTorch views)."""
        m = _c.sg_to_dlpack(self._h)
        if not m:
            _raise()
        p = m.contents.dl_tensor.data or 0
        m.contents.deleter(m)
        return p

    # DLPack protocol (numpy.from_dlpack, torch.utils.dlpack.from_dlpack). A consumer that
    # passes max_version >= (1, 0) (NumPy 2, PyTorch 2.x) gets DLPack 1.x's versioned form,
    # others (NumPy 1.2x, PyTorch 1.13) the 0.6 one.
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if stream is not None:
            raise BufferError("simdgrad tensors are on the CPU: stream must be None")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError("simdgrad tensors are on the CPU (kDLCPU, 0), not %r"
                              % (tuple(dl_device),))
        src = self._copy() if copy else self
        if max_version is None or max_version[0] < 1:
            m = _c.sg_to_dlpack(src._h)
            if not m:
                _raise()
            return _capsule_new(ctypes.cast(m, ctypes.c_void_p), _DLTENSOR,
                                ctypes.cast(_capsule_destructor, ctypes.c_void_p))
        m = _c.sg_to_dlpack_versioned(src._h)
        if not m:
            _raise()
        if copy:
            m.contents.flags |= _DL_FLAG_IS_COPIED
        return _capsule_new(ctypes.cast(m, ctypes.c_void_p), _DLTENSOR_VERSIONED,
                            ctypes.cast(_capsule_destructor_versioned, ctypes.c_void_p))

    def _copy(self):
        """A new Tensor with a copy of this one's elements (DLPack's copy=True)."""
        make = (_c.sg_tensor_f32, _c.sg_tensor_i32, _c.sg_tensor_bool)[_c.sg_dtype_of(self._h)]
        shape = _c.sg_shape(self._h)
        return _wrap(make(self.data_ptr(), shape, _c.sg_rank(self._h)))

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def numpy(self):
        """A NumPy array sharing this tensor's buffer."""
        import numpy as np
        return np.from_dlpack(self)

    def torch(self):
        """A torch.Tensor sharing this tensor's buffer."""
        import torch.utils.dlpack
        return torch.utils.dlpack.from_dlpack(self.__dlpack__())

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        return self.numpy().item()

    def __repr__(self):
        try:
            return "simdgrad.Tensor(%r, dtype=%s)" % (self.numpy(), self.dtype)
        except Exception:  # noqa: BLE001 - repr must not raise
            return "simdgrad.Tensor(shape=%r, dtype=%s)" % (self.shape, self.dtype)

    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __truediv__(self, o): return div(self, o)
    def __rtruediv__(self, o): return div(o, self)
    def __matmul__(self, o): return matmul(self, o)
    def __neg__(self): return neg(self)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int)
                       else shape)

    @property
    def T(self):
        return transpose(self)

    def sum(self, axis=None, keepdims=False): return sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return mean(self, axis, keepdims)


def _t(x):
    """x as a Tensor: Tensors pass through, Python numbers become f32 scalars, anything with
    __dlpack__ is shared, other sequences are copied as f32."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float)):
        return _wrap(_c.sg_scalar(float(x)))
    if hasattr(x, "__dlpack__"):
        return from_dlpack(x)
    return tensor(x)


def _call(fn, *args, extra=()):
    # The operands stay referenced here until the call returns: a temporary Tensor (made from a
    # Python number) must not be collected, and its C tensor disposed, before the op reads it.
    ts = [_t(a) for a in args]
    return _wrap(fn(*[t._h for t in ts], *extra))


# ---- Making tensors --------------------------------------------------------------------------
def from_dlpack(obj):
    """A Tensor sharing obj's buffer (no copy): obj has __dlpack__ (NumPy >= 1.22, PyTorch) or
    is a "dltensor" or "dltensor_versioned" PyCapsule (asked for with max_version (1, 0) where
    the producer takes it). Contiguous row-major float32, int32 and bool CPU tensors only;
    anything else raises Error naming the rule. The producer's deleter runs once, when the
    Tensor (and every view of it) is gone."""
    capsule = obj
    if hasattr(obj, "__dlpack__"):
        try:  # DLPack 1.x's versioned form where the producer has it
            capsule = obj.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer from before max_version (NumPy 1.2x, PyTorch 1.13)
            capsule = obj.__dlpack__()
    # sg_from_dlpack* take ownership in every case, refusals included: mark the capsule used
    # first so its destructor never deletes it again.
    if _capsule_valid(capsule, _DLTENSOR_VERSIONED):
        p = _capsule_pointer(capsule, _DLTENSOR_VERSIONED)
        _capsule_set_name(capsule, _USED_DLTENSOR_VERSIONED)
        m = ctypes.cast(p, ctypes.POINTER(_DLManagedTensorVersioned))
        return _wrap(_c.sg_from_dlpack_versioned(m))
    p = _capsule_pointer(capsule, _DLTENSOR)  # raises ValueError if consumed or not a capsule
    _capsule_set_name(capsule, _USED_DLTENSOR)
    return _wrap(_c.sg_from_dlpack(ctypes.cast(p, ctypes.POINTER(_DLManagedTensor))))


def tensor(data, dtype=None):
    """A copy of data (nested lists, a NumPy array, ...) as a new f32 (or dtype) Tensor."""
    import numpy as np
    a = np.ascontiguousarray(data, dtype={None: np.float32, F32: np.float32, I32: np.int32,
                                          BOOL: np.bool_, "float32": np.float32,
                                          "int32": np.int32, "bool": np.bool_}[dtype])
    return from_dlpack(a.copy())


def scalar(v): return _wrap(_c.sg_scalar(float(v)))
def zeros(shape): return _wrap(_c.sg_zeros(*_shape_arg(shape)))
def ones(shape): return _wrap(_c.sg_ones(*_shape_arg(shape)))
def fill(shape, v): return _wrap(_c.sg_fill(*_shape_arg(shape), float(v)))


def random_uniform(shape, lo=0.0, hi=1.0, seed=0):
    return _wrap(_c.sg_random_uniform(*_shape_arg(shape), lo, hi, seed))


def random_normal(shape, mean=0.0, stddev=1.0, seed=0):
    return _wrap(_c.sg_random_normal(*_shape_arg(shape), mean, stddev, seed))


# ---- Ops -------------------------------------------------------------------------------------
def add(a, b): return _call(_c.sg_add, a, b)
def sub(a, b): return _call(_c.sg_sub, a, b)
def mul(a, b): return _call(_c.sg_mul, a, b)
def div(a, b): return _call(_c.sg_div, a, b)


def matmul(a, b, transpose_a=False, transpose_b=False):
    return _call(_c.sg_matmul, a, b, extra=(transpose_a, transpose_b))


def neg(x): return _call(_c.sg_neg, x)
def exp(x): return _call(_c.sg_exp, x)
def log(x): return _call(_c.sg_log, x)
def sqrt(x): return _call(_c.sg_sqrt, x)
def tanh(x): return _call(_c.sg_tanh, x)
def sigmoid(x): return _call(_c.sg_sigmoid, x)
def relu(x): return _call(_c.sg_relu, x)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - the op's name
    return _call(_c.sg_sum, x, extra=(*_axes_arg(axis), keepdims))


def mean(x, axis=None, keepdims=False):
    return _call(_c.sg_mean, x, extra=(*_axes_arg(axis), keepdims))


def max(x, axis=None, keepdims=False):  # noqa: A001
    return _call(_c.sg_max, x, extra=(*_axes_arg(axis), keepdims))


def softmax(x, axis=-1): return _call(_c.sg_softmax, x, extra=(axis,))
def log_softmax(x, axis=-1): return _call(_c.sg_log_softmax, x, extra=(axis,))


def softmax_cross_entropy(labels, logits):
    """Mean over the batch of -sum(labels * log_softmax(logits)); last axis = classes."""
    return _call(_c.sg_softmax_cross_entropy, labels, logits)


def reshape(x, shape): return _call(_c.sg_reshape, x, extra=_shape_arg(shape))


def transpose(x, perm=None):
    p = None if perm is None else (ctypes.c_int * len(perm))(*perm)
    return _call(_c.sg_transpose, x, extra=(p,))


def one_hot(indices, depth): return _call(_c.sg_one_hot, indices, extra=(depth,))
def cast(x, dtype): return _call(_c.sg_cast, x, extra=(dtype,))


# ---- Engine, scopes, the tape ----------------------------------------------------------------
def backend_name():
    return _c.sg_backend_name().decode()


def version():
    return _c.sg_version_string().decode()


def set_memory_limit(nbytes):
    """Caps the bytes simdgrad's live tensors may hold (0: none); past it an op raises Error
    (SG_ERR_OOM) naming the op, the shape and the limit, and nothing is lost."""
    if nbytes < 0:
        raise ValueError("the memory limit is a byte count >= 0 (0: none)")
    _c.sg_set_memory_limit(int(nbytes))


def memory_limit():
    return _c.sg_memory_limit()


class scope:
    """with simdgrad.scope("train"): ... names the work inside: errors carry the scope path.
    Python owns its Tensors, so the scope's end disposes none of them."""

    def __init__(self, name):
        self._name = name.encode()

    def __enter__(self):
        _c.sg_scope_begin(self._name)
        return self

    def __exit__(self, *exc):
        _c.sg_scope_end(None, 0)
        return False


class Tape:
    """Records the ops run inside `with Tape() as tape:`; tape.gradient(y, xs) back-propagates
    from y and returns d y / d x for each x (and ends the tape: call it once, inside the with).
    Tapes do not nest, and are per thread."""

    def __init__(self):
        self._open = False

    def __enter__(self):
        if _c.sg_tape_begin() != 0:
            _raise()
        self._open = True
        return self

    def gradient(self, y, xs, dy=None):
        if not self._open:
            raise Error("tape: gradient() needs an open tape (inside the with, once)", 7)
        single = isinstance(xs, Tensor)
        xs = [xs] if single else list(xs)
        n = len(xs)
        xa = (_T * builtins.max(n, 1))(*[x._h for x in xs])
        ga = (_T * builtins.max(n, 1))()
        dy = None if dy is None else _t(dy)
        self._open = False  # sg_tape_end closes the tape whatever it returns
        st = _c.sg_tape_end(y._h, None if dy is None else dy._h, xa, n, ga)
        if st != 0:
            _raise()
        grads = [_wrap(ga[i]) for i in range(n)]
        return grads[0] if single else grads

    def __exit__(self, *exc):
        if self._open:
            self._open = False
            _c.sg_tape_end(None, None, None, 0, None)
            _c.sg_clear_error()
        return False
