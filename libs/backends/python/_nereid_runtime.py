"""The stub's side of the bridge: encodes responses, tracks BLS calls, cancellation and logs."""

import collections
import concurrent.futures
import json
import os
import queue
import threading

import _nereid_ipc as ipc
from _nereid_errors import TritonError, TritonModelException
from _nereid_reader import Reader
from _nereid_tensor import Tensor
from _nereid_types import InferenceResponse

_LOG_LEVELS = {0: "info", 1: "warn", 2: "error", 3: "verbose"}


def decode_tensors(conn, descs, blob):
    return [Tensor._from_wire(d["n"], d["t"], d["s"], ipc.read_tensor_bytes(conn, d, blob)) for d in descs]


def encode_tensors(builder, tensors, allowed=None, inputs=()):
    """Descriptors of `tensors` (only the `allowed` names); unmodified mapped inputs go back by index."""
    descs = []
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise TritonModelException(
                "Expected a 'Tensor' object in output_tensors, found type '%s'." % type(tensor).__name__)
        if allowed is not None and tensor.name() not in allowed:
            continue
        alias = tensor._alias_of(inputs) if inputs else None
        if alias is not None:
            descs.append({"n": tensor.name(), "t": tensor._wire, "s": tensor.shape(), "l": 0, "a": alias})
            continue
        descs.append(builder.add(tensor.name(), tensor._wire, tensor.shape(), tensor._payload()))
    return descs


def encode_response(builder, response, allowed, inputs=()):
    """InferenceResponse -> header dict (outputs filtered to the requested names)."""
    if response.has_error():
        err = response.error()
        return {"err": {"m": err.message(), "c": err.code()}}
    out = {"o": encode_tensors(builder, response.output_tensors(), allowed, inputs)}
    params = response.parameters()
    if params and params != "{}":
        out["p"] = params
    return out


def decode_response(conn, header, blob):
    if header is None:
        return InferenceResponse([])
    if "err" in header:
        return InferenceResponse([], error=TritonError(header["err"]["m"], header["err"]["c"]))
    return InferenceResponse(decode_tensors(conn, header.get("o", []), blob), parameters=header.get("p", "{}"))


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
        header = {"b": request._key[0], "i": request._key[1], "f": final}
        if response is not None:
            header["r"] = encode_response(builder, response, request._outputs, request._inputs)
        self.conn.send(ipc.MSG_RESPONSE, header, builder)

    # -- cancellation ----------------------------------------------------------------------
    def is_cancelled(self, key):
        if key is None:
            return False
        self.reader.poll()
        return tuple(key) in self._cancelled

    def forget_batch(self, batch_id):
        with self._lock:
            self._cancelled = {k for k in self._cancelled if k[0] != batch_id}

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

    # -- logs ------------------------------------------------------------------------------
    def log(self, level, message, filename, line):
        text = "%s:%d] %s" % (os.path.basename(filename), line, message)
        self.conn.send(ipc.MSG_LOG, {"l": _LOG_LEVELS.get(level, "info"), "m": text})

    # -- reading -------------------------------------------------------------------------
    def next_command(self):
        """The next INIT/EXECUTE/FINALIZE/... frame for the main thread (None when the server is gone)."""
        self.reader.wait_until(lambda: len(self._commands) > 0)
        return self._commands.popleft()

    def wait_future(self, future):
        self.reader.wait_until(future.done)
        return future.result()

    def wait_channel(self, channel):
        self.reader.wait_until(lambda: not channel.empty())
        return channel.get_nowait()

    def _dispatch(self, frame):
        """Routes one received frame; runs on whichever thread is reading."""
        if frame is None:
            self._commands.append(None)
            return
        msg_type, header, blob = frame
        if msg_type == ipc.MSG_BLS_RESULT:
            self._on_bls_result(header, blob)
        elif msg_type == ipc.MSG_CANCEL:
            with self._lock:
                self._cancelled.add((header["b"], header["i"]))
        else:
            self._commands.append(frame)


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"))
