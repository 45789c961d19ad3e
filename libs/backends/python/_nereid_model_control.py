"""`pb_utils.load_model`, `unload_model` and `is_model_ready`: a python model manages models.

Each call is one MODEL_CONTROL frame to the server, answered by one MODEL_CONTROL_RESULT frame
(see libs/backends/src/python/model-control-bridge.ts). The server runs it through the same
repository API and model lifecycle as a client's load and unload requests, so Triton's rules
apply: explicit model-control mode only, and only once the server has started (a model loaded at
start-up gets "Server not ready"). A file override travels as bytes, in the frame or through a
shared-memory file like a tensor.
"""

import _nereid_ipc as ipc
import _nereid_types
from _nereid_errors import TritonModelException

MSG_MODEL_CONTROL = 30
MSG_MODEL_CONTROL_RESULT = 31


def _runtime():
    runtime = _nereid_types.runtime
    if runtime is None or not getattr(runtime, "model_control_allowed", False):
        raise TritonModelException(
            "Model management (load_model, unload_model, is_model_ready) is only supported "
            "during the 'initialize' and 'execute' functions.")
    return runtime


def _call(what, header, builder=None):
    """Sends one request and waits for its answer; raises with Triton's '<what>: <reason>'."""
    answer = _runtime().model_control(header, builder)
    error = answer.get("e")
    if error is not None:
        raise TritonModelException("%s: %s" % (what, error))
    return answer


def load_model(model_name, config="", files=None):
    """Loads (or reloads) `model_name`; `config` is ModelConfig JSON text overriding the
    repository's, `files` maps `file:<version>/<path>` to the bytes of an override model folder."""
    if files is not None and not isinstance(files, dict):
        raise TritonModelException(
            "failed to load model '%s', files should be a dictionary of file paths and file contents" % model_name)
    runtime = _runtime()
    builder = runtime.conn.builder()
    descs = []
    for key, content in (files or {}).items():
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise TritonModelException(
                "failed to load model '%s', files should be a dictionary of file paths and file contents" % model_name)
        descs.append(builder.add(str(key), "UINT8", [len(content)], content))
    header = {"op": "load", "m": str(model_name), "c": str(config or ""), "f": descs}
    _call("Failed to load model", header, builder)


def unload_model(model_name, unload_dependents=False):
    header = {"op": "unload", "m": str(model_name), "ud": bool(unload_dependents)}
    _call("Failed to unload model", header)


def is_model_ready(model_name, model_version=""):
    """Whether the version (a decimal string; "" for the server's choice) is ready."""
    header = {"op": "ready", "m": str(model_name), "v": str(model_version)}
    return bool(_call("Failed to check model readiness", header).get("r", False))


__all__ = ["load_model", "unload_model", "is_model_ready", "ipc"]
