"""`pb_utils.Tensor` and the BYTES element codec."""

import mmap
import struct
from math import prod

import numpy as np

import _nereid_dlpack as dlpack
from _nereid_errors import TritonModelException
from _nereid_ipc import _NUMPY_TO_WIRE, WIRE_TO_DTYPE, pages_unmodified, wire_type_of

_WIRE_TO_CODE = {
    "BOOL": 1, "UINT8": 2, "UINT16": 3, "UINT32": 4, "UINT64": 5, "INT8": 6, "INT16": 7,
    "INT32": 8, "INT64": 9, "FP16": 10, "FP32": 11, "FP64": 12, "BYTES": 13, "BF16": 14,
}


def serialize_bytes_elements(array):
    """Object/bytes_ array -> (uint32 LE length + bytes) per element in C order."""
    parts = []
    for item in array.ravel(order="C"):
        data = bytes(item) if isinstance(item, bytes) else str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(data)))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes_elements(buffer, count):
    """Serialized BYTES buffer -> 1-D object array of `bytes` with `count` elements."""
    view = memoryview(buffer).cast("B")
    out = np.empty(count, dtype=np.object_)
    offset = 0
    unpack = struct.unpack_from
    for i in range(count):
        (length,) = unpack("<I", view, offset)
        offset += 4
        out[i] = bytes(view[offset:offset + length])
        offset += length
    return out


class Tensor:
    """A named tensor backed by a numpy array (BF16 keeps its raw 16-bit patterns)."""

    _mapped = False  # True for inputs that map a shared-memory file (see _alias_of)

    def __init__(self, name, numpy_array, _wire_type=None):
        if not isinstance(name, str) or name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        array = numpy_array if isinstance(numpy_array, np.ndarray) else np.asarray(numpy_array)
        wire = _wire_type or _NUMPY_TO_WIRE.get(array.dtype) or wire_type_of(array.dtype)
        if wire is None:
            raise TritonModelException("NumPy dtype is not supported.")
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._name = name
        self._array = array
        self._wire = wire

    @classmethod
    def _from_wire(cls, name, wire, shape, buffer):
        """A tensor over received bytes; numeric arrays view the buffer without copying."""
        count = prod(shape)
        if wire == "BYTES":
            array = deserialize_bytes_elements(buffer, count).reshape(shape)
        else:
            array = np.frombuffer(buffer, dtype=WIRE_TO_DTYPE[wire], count=count).reshape(shape)
        tensor = _wrap(name, array, wire)
        if isinstance(buffer, mmap.mmap):
            tensor._mapped = True
        return tensor

    def _alias_of(self, inputs):
        """Index of the mapped input whose untouched memory this tensor is, else None.

        An output that is an unmodified input (pass-through models) goes back as a reference, so
        the server reuses its own copy of the bytes instead of receiving them again.
        """
        candidates = [(i, s) for i, s in enumerate(inputs) if s._mapped and s._wire == self._wire]
        if not candidates or not self._array.size:
            return None
        address = self._array.__array_interface__["data"][0]
        for index, source in candidates:
            array = source._array
            if array.__array_interface__["data"][0] == address and array.nbytes == self._array.nbytes:
                return index if pages_unmodified(address, array.nbytes) else None
        return None

    def _payload(self):
        """Wire bytes of this tensor."""
        if self._wire == "BYTES":
            return serialize_bytes_elements(self._array) if self._array.size else b""
        return self._array.reshape(-1).view(np.uint8) if self._array.size else b""

    def name(self):
        return self._name

    def as_numpy(self):
        if self._wire == "BF16":
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.")
        return self._array

    def shape(self):
        return [int(d) for d in self._array.shape]

    def triton_dtype(self):
        return _WIRE_TO_CODE[self._wire]

    def is_cpu(self):
        return True

    def to_dlpack(self):
        return self.__dlpack__()

    def __dlpack__(self, stream=None, **_kwargs):
        """A "dltensor" capsule over this tensor's memory (zero-copy; BF16 as DLPack bfloat16)."""
        if self._wire == "BYTES":
            raise TritonModelException("DLPack does not have support for string tensors.")
        return dlpack.export(self._array, self._wire)

    def __dlpack_device__(self):
        return (dlpack.KDL_CPU, 0)

    @staticmethod
    def from_dlpack(name, dlpack_or_tensor):
        """A tensor over the memory of a DLPack capsule or of an object with `__dlpack__` (zero-copy)."""
        if not isinstance(name, str) or name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        source = dlpack_or_tensor
        if not isinstance(source, dlpack.CapsuleType):
            if not hasattr(source, "__dlpack__") or not hasattr(source, "__dlpack_device__"):
                raise TritonModelException(
                    "Provided tensor is not supported. Tensor must be a DLPack capsule "
                    "or have `__dlpack__` and `__dlpack_device__` attributes")
            dlpack.check_device(int(source.__dlpack_device__()[0]))
            source = source.__dlpack__(stream=None)
        array, wire = dlpack.import_capsule(source)
        return _wrap(name, array, wire)

    def __repr__(self):
        return "Tensor(name=%r, datatype=%s, shape=%r)" % (self._name, self._wire, self.shape())


_new_object = object.__new__


def _wrap(name, array, wire):
    """A Tensor over an array the stub made itself (C-contiguous, dtype matching `wire`): no checks."""
    tensor = _new_object(Tensor)
    tensor._name = name
    tensor._array = array
    tensor._wire = wire
    return tensor
