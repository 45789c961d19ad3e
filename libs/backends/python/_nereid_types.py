"""The classes Triton injects into `triton_python_backend_utils`, implemented over Nereid's stub."""

import asyncio
import json
import queue
import sys
import threading

from _nereid_errors import TritonError, TritonModelException  # noqa: F401  (re-exported)
from _nereid_tensor import Tensor  # noqa: F401  (re-exported)

TRITONSERVER_MEMORY_GPU = 0
TRITONSERVER_MEMORY_CPU = 1
_MEMORY_DEFAULT = 2
_RESPONSE_COMPLETE_FINAL = 1

# Set by the stub before the model module is imported (see _nereid_runtime.Runtime).
runtime = None
_new_object = object.__new__


def _check_parameters(parameters):
    if parameters is None:
        return "{}"
    if not isinstance(parameters, dict):
        raise TritonModelException("Parameters must be a dict, found type '%s'" % type(parameters).__name__)
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException("Expect parameters keys to have type str, found type %s" % type(key))
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                "Expect parameters values to have type bool/int/str, found type %s" % type(value))
    return json.dumps(parameters, separators=(",", ":"))


class PreferredMemory:
    def __init__(self, preferred_memory_type=_MEMORY_DEFAULT, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    """A request's trace. Its context is the JSON text of the W3C headers (`traceparent`, maybe
    `tracestate`) of the request's model span when the request is traced in OpenTelemetry mode, so
    that a model can continue the trace; None otherwise (Triton mode, or not traced)."""

    def __init__(self, context=None):
        self._context = context
        self._key = None  # (batch id, index) of the received request whose trace this is (BLS children)

    def get_context(self):
        return self._context or None


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        self._outputs = list(output_tensors) if output_tensors is not None else []
        if error is not None and not isinstance(error, TritonError):
            raise TritonModelException("InferenceResponse error must be a TritonError")
        self._error = error
        if parameters is None:
            self._parameters = "{}"
        else:
            self._parameters = parameters if isinstance(parameters, str) else _check_parameters(parameters)

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return self._parameters


class InferenceResponseSender:
    """Sends responses of one received request; closed after the final flag."""

    def __init__(self, request):
        self._request = request
        self._lock = threading.Lock()
        self._closed = False
        self._sent = 0

    def send(self, response=None, flags=0):
        if flags not in (0, _RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero.")
        if response is not None and not isinstance(response, InferenceResponse):
            raise TritonModelException("Unable to send response. Expected an 'InferenceResponse' object.")
        final = flags == _RESPONSE_COMPLETE_FINAL
        with self._lock:
            if self._closed:
                raise TritonModelException("Unable to send response. Response sender has been closed.")
            if response is not None and not runtime.decoupled and self._sent > 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one response.")
            if response is not None:
                self._sent += 1
            self._closed = final
        runtime.send_response(self._request, response, final)

    def is_cancelled(self):
        return self._request.is_cancelled()

    def _closed_or_answered(self):
        with self._lock:
            return self._closed or self._sent > 0

    def _close(self):
        with self._lock:
            was_open = not self._closed
            self._closed = True
            return was_open


class ResponseIterator:
    """Responses of a decoupled BLS call; ends after the response carrying the final flag."""

    def __init__(self, bls_id, channel):
        self._bls_id = bls_id
        self._channel = channel
        self._seen = []
        self._done = False

    def __iter__(self):
        if self._done:
            return iter(list(self._seen))
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        response, final = runtime.wait_channel(self._channel)
        self._seen.append(response)
        if final:
            self._done = True
        return response

    def cancel(self):
        runtime.cancel_bls(self._bls_id)


class InferenceRequest:
    """A request received in execute, or one a model builds to call another model (BLS)."""

    # Defaults of received requests (set per instance by __init__ for BLS requests).
    _model_name = None
    _model_version = -1
    _release_flags = 1
    _sender = None
    _key = None  # (batch id, index) for received requests
    _preferred_memory = None
    _trace = None
    _trace_context = None  # what the request's trace().get_context() returns (OpenTelemetry mode)
    _alias_inputs = ()  # received inputs that map shared memory: outputs may refer to them (see encode_tensors)

    def __init__(self, request_id="", correlation_id=0, inputs=None, requested_output_names=None,
                 model_name=None, model_version=-1, flags=0, timeout=0, preferred_memory=None,
                 trace=None, parameters=None):
        if inputs is None or requested_output_names is None or model_name is None:
            raise TritonModelException(
                "InferenceRequest requires 'inputs', 'requested_output_names' and 'model_name'")
        if isinstance(correlation_id, bool) or not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        for tensor in inputs:
            if tensor is None:
                raise TritonModelException("Input tensor cannot be None")
        for name in requested_output_names:
            if not name:
                raise TritonModelException("Requested output name cannot be empty")
        if isinstance(model_name, bytes):
            model_name = model_name.decode("utf-8")
        self._id = request_id
        self._correlation_id = correlation_id
        self._inputs = list(inputs)
        self._outputs = set(requested_output_names)
        self._model_name = model_name
        self._model_version = int(model_version)
        self._flags = int(flags)
        self._timeout = int(timeout)
        self._preferred_memory = preferred_memory or PreferredMemory()
        self._trace = trace or InferenceTrace()
        self._parameters = _check_parameters(parameters)
        self._release_flags = 1
        self._sender = None
        self._key = None  # (batch id, index) for received requests

    @classmethod
    def _received(cls, key, request_id, correlation_id, inputs, mapped, outputs, flags, timeout, parameters,
                  trace_context):
        request = _new_object(cls)
        request._key = key
        if trace_context is not None:
            request._trace_context = trace_context
        request._id = request_id
        request._correlation_id = correlation_id
        request._inputs = inputs
        if mapped:
            request._alias_inputs = inputs
        request._outputs = outputs
        request._flags = flags
        request._timeout = timeout
        request._parameters = parameters
        return request

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._id

    def correlation_id(self):
        return self._correlation_id

    def requested_output_names(self):
        return self._outputs if self._outputs is not None else set()

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = int(flags)

    def timeout(self):
        return self._timeout

    def parameters(self):
        return self._parameters

    def trace(self):
        if self._trace is None:
            self._trace = InferenceTrace(self._trace_context)
            self._trace._key = self._key  # a BLS request given it is traced as this request's child
        return self._trace

    def get_response_sender(self):
        if self._sender is None:
            self._sender = InferenceResponseSender(self)
        return self._sender

    def is_cancelled(self):
        return runtime.is_cancelled(self._key)

    def set_release_flags(self, flags):
        self._release_flags = int(flags)

    def exec(self, decoupled=False):
        runtime.check_bls_allowed()
        if decoupled:
            bls_id, channel = runtime.submit_bls(self, True)
            return ResponseIterator(bls_id, channel)
        _bls_id, future = runtime.submit_bls(self, False)
        return runtime.wait_future(future)

    def async_exec(self, decoupled=False):
        runtime.check_bls_allowed()
        if decoupled:
            bls_id, channel = runtime.submit_bls(self, True)

            async def stream():
                return ResponseIterator(bls_id, channel)

            return stream()
        loop = asyncio.get_running_loop()
        _bls_id, future = runtime.submit_bls(self, False)
        # An executor thread waits, so it can read the answer when no other thread is reading.
        return loop.run_in_executor(None, runtime.wait_future, future)


class Logger:
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3

    @staticmethod
    def log(message, level=0):
        caller = sys._getframe(1)
        if caller.f_code.co_filename == __file__:
            caller = caller.f_back
        runtime.log(level, str(message), caller.f_code.co_filename, caller.f_lineno)

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)
