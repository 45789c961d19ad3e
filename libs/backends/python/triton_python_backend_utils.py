"""Nereid's implementation of Triton's `triton_python_backend_utils` module.

Models written for Triton's python backend import this module as `pb_utils`. The pure-Python
helpers are defined here; the classes that Triton injects from its compiled module (Tensor,
InferenceRequest, InferenceResponse, TritonError, Logger, ...) come from `_nereid_types`, which
talks to the Nereid server through the stub's connection.
"""

import json
import struct

import numpy as np

from _nereid_types import (  # noqa: F401  (re-exported API)
    InferenceRequest,
    InferenceResponse,
    Logger,
    PreferredMemory,
    Tensor,
    TritonError,
    TritonModelException,
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_GPU,
)
from _nereid_metrics import Metric, MetricFamily, MetricKind  # noqa: F401  (re-exported API)
from _nereid_model_control import is_model_ready, load_model, unload_model  # noqa: F401  (re-exported API)
from _nereid_tensor import serialize_bytes_elements

TRITON_STRING_TO_NUMPY = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

_CODE_TO_NUMPY = {
    1: np.bool_,
    2: np.uint8,
    3: np.uint16,
    4: np.uint32,
    5: np.uint64,
    6: np.int8,
    7: np.int16,
    8: np.int32,
    9: np.int64,
    10: np.float16,
    11: np.float32,
    12: np.float64,
    13: np.object_,
}

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

_model_dir = ""


def get_model_dir():
    """The directory holding the model file (`<model_dir>/<version>`)."""
    return _model_dir


def serialize_byte_tensor(input_tensor):
    """Object or bytes_ array -> bytes of (uint32 LE length + bytes) per element, C order."""
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type != np.bytes_:
        return None
    return serialize_bytes_elements(input_tensor)


def deserialize_bytes_tensor(encoded_tensor):
    """Inverse of serialize_byte_tensor: a 1-D object array of bytes."""
    view = memoryview(encoded_tensor).cast("B")
    items = []
    offset = 0
    total = len(view)
    while offset < total:
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        items.append(bytes(view[offset:offset + length]))
        offset += length
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def get_input_tensor_by_name(inference_request, name):
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config, name):
    for entry in model_config.get("input", []):
        if entry["name"] == name:
            return entry
    return None


def get_output_config_by_name(model_config, name):
    for entry in model_config.get("output", []):
        if entry["name"] == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config):
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"].get("decoupled", False)
    return False


def triton_to_numpy_type(data_type):
    return _CODE_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type):
    if data_type == np.bytes_ or data_type == np.object_:
        return 13
    for code, np_type in _CODE_TO_NUMPY.items():
        if code != 13 and data_type == np_type:
            return code
    return None


def triton_string_to_numpy(triton_type_string):
    return TRITON_STRING_TO_NUMPY[triton_type_string]


from _nereid_model_config import ModelConfig  # noqa: E402,F401  (re-exported API)
