"""DLPack export and import for `pb_utils.Tensor`, written over ctypes.

numpy's own DLPack support cannot carry BF16 (numpy has no bfloat16) and, before numpy 1.25, BOOL;
Triton's stub carries every numeric datatype through DLPack, BF16 included, zero-copy. This module
does the same for CPU memory: `export` wraps a C-contiguous array in a "dltensor" capsule with the
DLPack datatype of its Triton datatype; `import_capsule` views the memory a capsule describes as a
numpy array (BF16 as its raw uint16 patterns) and calls the producer's deleter once that array is
gone. Legacy ("dltensor") and versioned ("dltensor_versioned", DLPack 1.x) capsules are accepted.
"""

import ctypes
import sys
from math import prod

import numpy as np

from _nereid_errors import TritonModelException
from _nereid_ipc import WIRE_TO_DTYPE

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3

# Triton datatype -> (DLPack type code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6.
WIRE_TO_DL = {
    "BOOL": (6, 8), "UINT8": (1, 8), "UINT16": (1, 16), "UINT32": (1, 32), "UINT64": (1, 64),
    "INT8": (0, 8), "INT16": (0, 16), "INT32": (0, 32), "INT64": (0, 64),
    "FP16": (2, 16), "FP32": (2, 32), "FP64": (2, 64), "BF16": (4, 16),
}
_DL_TO_WIRE = {v: k for k, v in WIRE_TO_DL.items()}
_KDL_BFLOAT = 4

_LEGACY = b"dltensor"
_VERSIONED = b"dltensor_versioned"
_USED_LEGACY = b"used_dltensor"
_USED_VERSIONED = b"used_dltensor_versioned"
_FLAG_READ_ONLY = 1


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _Version), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter),
        ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor),
    ]


_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

CapsuleType = type(_api.PyCapsule_New(1, b"nereid_probe", None))

# Exported tensors: address -> [managed, shape, array, capsule]. An entry lives until its consumer
# calls the deleter, or, for a capsule nobody consumed, until a sweep finds the capsule unreferenced.
# (The capsules have no destructor: a Python callback run while a capsule is freed may run with an
# exception pending, e.g. when numpy refuses a capsule, and would swallow it.)
_exported = {}


def _forget(address):
    _exported.pop(address, None)


_delete_exported = _Deleter(_forget)


def _sweep():
    """Drops the exported tensors whose capsule nobody holds and nobody consumed."""
    for address, entry in list(_exported.items()):
        capsule = entry[3]
        if capsule is None:
            continue
        if not _api.PyCapsule_IsValid(capsule, _LEGACY):
            entry[3] = None  # consumed: the consumer calls the deleter
        elif sys.getrefcount(capsule) <= 3:  # the entry, `capsule` and getrefcount's argument
            _exported.pop(address, None)  # pop: a deleter on another thread may have removed it


def export(array, wire):
    """A "dltensor" capsule over the C-contiguous CPU `array`, typed as Triton datatype `wire`."""
    _sweep()
    code, bits = WIRE_TO_DL[wire]
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    managed = _Managed()
    tensor = managed.dl_tensor
    tensor.data = array.ctypes.data
    tensor.device = _Device(KDL_CPU, 0)
    tensor.ndim = array.ndim
    tensor.dtype = _DataType(code, bits, 1)
    tensor.shape = shape
    tensor.strides = None  # compact row-major
    tensor.byte_offset = 0
    managed.deleter = _delete_exported
    address = ctypes.addressof(managed)
    capsule = _api.PyCapsule_New(address, _LEGACY, None)
    _exported[address] = [managed, shape, array, capsule]
    return capsule


class _Release:
    """Calls a consumed DLPack tensor's deleter when the last numpy array over its memory is gone."""

    __slots__ = ("_address", "_deleter")

    def __init__(self, address, deleter):
        self._address = address
        self._deleter = deleter

    def __del__(self):
        if self._deleter:
            self._deleter(self._address)


def import_capsule(capsule):
    """(numpy array over the capsule's CPU memory, Triton datatype); the capsule is consumed."""
    if not isinstance(capsule, CapsuleType):
        raise TritonModelException(
            "Provided tensor is not supported. Tensor must be a DLPack capsule "
            "or have `__dlpack__` and `__dlpack_device__` attributes")
    if _api.PyCapsule_IsValid(capsule, _LEGACY):
        name, used, kind = _LEGACY, _USED_LEGACY, _Managed
    elif _api.PyCapsule_IsValid(capsule, _VERSIONED):
        name, used, kind = _VERSIONED, _USED_VERSIONED, _ManagedVersioned
    elif _api.PyCapsule_IsValid(capsule, _USED_LEGACY) or _api.PyCapsule_IsValid(capsule, _USED_VERSIONED):
        raise TritonModelException("DLPack capsule was already consumed: a capsule can be imported only once.")
    else:
        raise TritonModelException("Provided object is not a DLPack capsule (named 'dltensor' or 'dltensor_versioned').")
    address = _api.PyCapsule_GetPointer(capsule, name)
    managed = kind.from_address(address)
    read_only = False
    if kind is _ManagedVersioned:
        if managed.version.major != 1:
            raise TritonModelException("DLPack version %d.%d is not supported." % (managed.version.major, managed.version.minor))
        read_only = bool(managed.flags & _FLAG_READ_ONLY)
    tensor = managed.dl_tensor
    check_device(tensor.device.device_type)
    wire = _wire_of(tensor.dtype)
    shape = tuple(int(tensor.shape[i]) for i in range(tensor.ndim))
    if tensor.strides and not _c_contiguous(shape, [int(tensor.strides[i]) for i in range(tensor.ndim)]):
        raise TritonModelException(
            "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported.")
    # From here on the memory is ours to release: the capsule must not free it again.
    _api.PyCapsule_SetName(capsule, used)
    release = _Release(address, managed.deleter)
    dtype = WIRE_TO_DTYPE[wire]  # BF16: its raw uint16 patterns
    nbytes = prod(shape) * dtype.itemsize
    if nbytes == 0 or not tensor.data:
        del release  # nothing to view: the producer may free its tensor now
        return np.empty(shape, dtype), wire
    memory = (ctypes.c_uint8 * nbytes).from_address(tensor.data + tensor.byte_offset)
    memory._nereid_release = release  # the array's base chain keeps `memory`, hence `release`, alive
    array = np.frombuffer(memory, dtype=dtype).reshape(shape)
    if read_only:
        array.flags.writeable = False
    return array, wire


def check_device(device_type):
    """Raises unless DLPack memory of `device_type` can be read here (CPU, CUDA host)."""
    if device_type == KDL_CUDA:
        raise TritonModelException(
            "DLPack capsule passed pointer to memory allocated on GPU device, when GPU is not available")
    if device_type not in (KDL_CPU, KDL_CUDA_HOST):
        raise TritonModelException("DLDevice type %d is not support by Python backend." % device_type)


def _wire_of(dl_type):
    if dl_type.lanes == 1 and dl_type.code == _KDL_BFLOAT and dl_type.bits != 16:
        raise TritonModelException("Expected BF16 tensor to have 16 bits, but had: %d" % dl_type.bits)
    wire = _DL_TO_WIRE.get((dl_type.code, dl_type.bits)) if dl_type.lanes == 1 else None
    if wire is None:
        raise TritonModelException(
            "DLPack data type (code %d, bits %d, lanes %d) is not supported by the python backend."
            % (dl_type.code, dl_type.bits, dl_type.lanes))
    return wire


def _c_contiguous(shape, strides):
    """Whether element strides describe C order (dims of size 1 may have any stride)."""
    if 0 in shape:
        return True
    expected = 1
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True
