"""The stub's side of the bridge: encodes responses, tracks BLS calls, cancellation and logs."""

import collections
import concurrent.futures
import contextvars
import json
import os
import queue
import threading

from math import prod

import numpy as np

import _nereid_ipc as ipc
from _nereid_errors import TritonError, TritonModelException
from _nereid_reader import Reader
from _nereid_tensor import Tensor
from _nereid_types import InferenceResponse

_DTYPES = ipc.WIRE_TO_DTYPE  # numeric wire types only (no BYTES)
_ndarray = np.ndarray  # ndarray(shape, dtype, buffer, offset): a view, half the cost of frombuffer + reshape
_new_object = object.__new__

_LOG_LEVELS = {0: "info", 1: "warn", 2: "error", 3: "verbose"}

# The batch whose `execute` is running in this context (a coroutine execute keeps it: asyncio copies
# the context): its log lines carry the batch's request ids. None in initialize, finalize and in
# threads the model starts itself.
current_batch = contextvars.ContextVar("nereid_current_batch", default=None)
_MSG_BLS_RESULT = ipc.MSG_BLS_RESULT
_MSG_CANCEL = ipc.MSG_CANCEL
_MSG_METRIC_REQUEST = 40  # see _nereid_metrics
_MSG_METRIC_RESULT = 41
_MSG_MODEL_CONTROL = 30  # see _nereid_model_control
_MSG_MODEL_CONTROL_RESULT = 31


def decode_tensors(conn, descs, blob):
    """Tensors of received descriptors, and whether one of them maps a shared-memory file."""
    tensors = []
    mapped = False
    for name, wire, shape, length, where in descs:
        dtype = _DTYPES.get(wire)
        if dtype is not None and type(where) is int:  # numeric, inline: a view of the frame's bytes
            count = prod(shape)
            if length < count * dtype.itemsize:
                raise ValueError("tensor '%s' has %d bytes, %d expected" % (name, length, count * dtype.itemsize))
            tensor = _new_object(Tensor)  # _nereid_tensor._wrap, inlined
            tensor._name = name
            tensor._array = _ndarray(shape, dtype, blob, where)
            tensor._wire = wire
            tensors.append(tensor)
        else:
            tensor = Tensor._from_wire(name, wire, shape, ipc.read_tensor_bytes(conn, length, where, blob))
            mapped = mapped or tensor._mapped
            tensors.append(tensor)
    return tensors, mapped


def encode_tensors(builder, tensors, allowed=None, inputs=()):
    """Descriptors of `tensors` (only the `allowed` names); unmodified mapped `inputs` go back by index."""
    descs = []
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise TritonModelException(
                "Expected a 'Tensor' object in output_tensors, found type '%s'." % type(tensor).__name__)
        name = tensor._name
        if allowed is not None and name not in allowed:
            continue
        wire = tensor._wire
        if inputs:
            alias = tensor._alias_of(inputs)
            if alias is not None:
                descs.append([name, wire, tensor.shape(), 0, [alias]])
                continue
        if wire == "BYTES":
            descs.append(builder.add(name, wire, tensor._array.shape, tensor._payload()))
        else:
            descs.append(builder.add_array(name, wire, tensor._array))
    return descs


def encode_response(builder, response, allowed, inputs=()):
    """InferenceResponse -> response entry (outputs filtered to the requested names)."""
    error = response._error
    if error is not None:
        return {"m": error.message(), "c": error.code()}
    descs = encode_tensors(builder, response._outputs, allowed, inputs)
    params = response._parameters
    if params and params != "{}":
        return [descs, params]
    return [descs]


def decode_response(conn, entry, blob):
    if entry is None:
        return InferenceResponse([])
    if isinstance(entry, dict):
        return InferenceResponse([], error=TritonError(entry["m"], entry["c"]))
    tensors, _mapped = decode_tensors(conn, entry[0], blob)
    return InferenceResponse(tensors, parameters=entry[1] if len(entry) > 1 else "{}")


class Runtime:
    def __init__(self, conn):
        self.conn = conn
        self.decoupled = False
        self.bls_allowed = False
        self._commands = collections.deque()
        self.reader = Reader(conn, self._dispatch)
        self._lock = threading.Lock()
        self._next_bls = 0
        self._pending = {}
        self._cancelled = set()

    # -- responses -------------------------------------------------------------------------
    def send_response(self, request, response, final):
        builder = self.conn.builder()
        entry = None
        if response is not None:
            entry = encode_response(builder, response, request._outputs, request._alias_inputs)
        self.conn.send(ipc.MSG_RESPONSE, [request._key[0], request._key[1], final, entry], builder)
        if final:
            self.forget_request(request._key)

    # -- cancellation ----------------------------------------------------------------------
    def is_cancelled(self, key):
        if key is None:
            return False
        self.reader.poll()
        return tuple(key) in self._cancelled

    def has_cancelled(self):
        return bool(self._cancelled)

    def forget_batch(self, batch_id):
        if not self._cancelled:
            return
        with self._lock:
            self._cancelled = {k for k in self._cancelled if k[0] != batch_id}

    def forget_request(self, key):
        """Drops the cancel mark of a request that got its final response (none kept for ever)."""
        if not self._cancelled or key is None:
            return
        with self._lock:
            self._cancelled.discard(tuple(key))

    # -- BLS -------------------------------------------------------------------------------
    def check_bls_allowed(self):
        if not self.bls_allowed:
            raise TritonModelException("BLS is only supported during the 'execute' function.")

    def submit_bls(self, request, decoupled):
        with self._lock:
            self._next_bls += 1
            bls_id = self._next_bls
            channel = queue.Queue() if decoupled else concurrent.futures.Future()
            self._pending[bls_id] = channel
        builder = self.conn.builder()
        header = {
            "id": bls_id, "d": decoupled, "m": request._model_name, "v": request._model_version,
            "rid": request._id, "fl": request._flags, "to": request._timeout,
            "p": request._parameters, "out": sorted(request._outputs),
            "in": encode_tensors(builder, request._inputs),
        }
        cid = request._correlation_id
        header["cids" if isinstance(cid, str) else "cidi"] = str(cid)
        parent = request._trace._key if request._trace is not None else None
        if parent is not None:
            header["tr"] = list(parent)
        self.conn.send(ipc.MSG_BLS_REQUEST, header, builder)
        return bls_id, channel

    def cancel_bls(self, bls_id):
        self.conn.send(ipc.MSG_BLS_CANCEL, {"id": bls_id})

    def _on_bls_result(self, header, blob):
        bls_id = header["id"]
        final = header.get("f", True)
        with self._lock:
            channel = self._pending.get(bls_id)
            if final:
                self._pending.pop(bls_id, None)
        if channel is None:
            return
        response = decode_response(self.conn, header.get("r"), blob)
        if isinstance(channel, concurrent.futures.Future):
            channel.set_result(response)
        else:
            channel.put((response, final))

    # -- model control (pb_utils.load_model / unload_model / is_model_ready) ------------------
    def model_control(self, header, builder=None):
        """Sends one MODEL_CONTROL request and waits for the server's answer (a dict)."""
        return self._call(_MSG_MODEL_CONTROL, header, builder)

    def _call(self, kind, header, builder=None):
        """Sends one request of `kind` under a fresh id and waits for its answer (see `_on_result`)."""
        with self._lock:
            self._next_bls += 1
            call_id = self._next_bls
            future = concurrent.futures.Future()
            self._pending[call_id] = future
        header["id"] = call_id
        self.conn.send(kind, header, builder)
        return self.wait_future(future)

    def _on_result(self, header):
        """The server's answer to a `_call` (MODEL_CONTROL or METRIC_REQUEST)."""
        with self._lock:
            future = self._pending.pop(header["id"], None)
        if future is not None:
            future.set_result(header)

    # -- custom metrics (pb_utils.MetricFamily, see _nereid_metrics) --------------------------
    def metric_call(self, header, wait):
        """Sends one METRIC_REQUEST; with `wait`, waits for the server's answer (a dict)."""
        if not wait:
            self.conn.send(_MSG_METRIC_REQUEST, header)
            return None
        return self._call(_MSG_METRIC_REQUEST, header)

    # -- logs ------------------------------------------------------------------------------
    def log(self, level, message, filename, line):
        text = "%s:%d] %s" % (os.path.basename(filename), line, message)
        header = {"l": _LOG_LEVELS.get(level, "info"), "m": text}
        batch = current_batch.get()
        if batch is not None:
            header["b"] = batch
        self.conn.send(ipc.MSG_LOG, header)

    # -- reading -------------------------------------------------------------------------
    def next_command(self):
        """The next INIT/EXECUTE/FINALIZE/... frame for the main thread (None when the server is gone)."""
        commands = self._commands
        if not commands:
            self.reader.wait_until(commands.__len__, wakeable=False)
        return commands.popleft()

    def wait_future(self, future):
        self.reader.wait_until(future.done)
        return future.result()

    def wait_channel(self, channel):
        self.reader.wait_until(lambda: not channel.empty())
        return channel.get_nowait()

    def _dispatch(self, frame):
        """Routes one received frame (None: the server is gone); runs on whichever thread is reading."""
        if frame is not None:
            msg_type = frame[0]
            if msg_type == _MSG_BLS_RESULT:
                return self._on_bls_result(frame[1], frame[2])
            if msg_type == _MSG_METRIC_RESULT:
                return self._on_result(frame[1])
            if msg_type == _MSG_MODEL_CONTROL_RESULT:
                return self._on_result(frame[1])
            if msg_type == _MSG_CANCEL:
                header = frame[1]
                with self._lock:
                    self._cancelled.add((header["b"], header["i"]))
                return None
        self._commands.append(frame)
        return None


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"))
