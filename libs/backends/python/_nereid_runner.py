"""Loads the user's model.py and drives auto_complete_config / initialize / execute / finalize."""

import asyncio
import importlib.util
import json
import os
import sys
import threading
import types

import _nereid_ipc as ipc
import triton_python_backend_utils as pb_utils
from _nereid_errors import describe_exception
from _nereid_runtime import current_batch, decode_tensors, encode_response
from _nereid_types import InferenceRequest, InferenceResponse


_imported = {}  # model file -> TritonPythonModel: a stub reused after auto-complete imports it once


def import_model_module(model_file, model_dir, version_dir):
    """Imports `<version>/<stem>.py` as the module `<version>.<stem>`, as Triton's stub does."""
    if model_file in _imported:
        return _imported[model_file]
    for path in (version_dir, model_dir):
        if path not in sys.path:
            sys.path.append(path)
    pb_utils._model_dir = version_dir
    package_name = os.path.basename(version_dir.rstrip(os.sep))
    stem = os.path.splitext(os.path.basename(model_file))[0]
    if package_name not in sys.modules:
        package = types.ModuleType(package_name)
        package.__path__ = [version_dir]
        sys.modules[package_name] = package
    module_name = package_name + "." + stem
    spec = importlib.util.spec_from_file_location(module_name, model_file)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load the model file '%s'" % model_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "TritonPythonModel"):
        raise AttributeError("the model file '%s' does not define a class named 'TritonPythonModel'" % model_file)
    _imported[model_file] = module.TritonPythonModel
    return module.TritonPythonModel


def auto_complete(model_class, config_json):
    """Runs `auto_complete_config` when the class has one; returns the config as JSON text."""
    config = pb_utils.ModelConfig(config_json)
    if not hasattr(model_class, "auto_complete_config"):
        return json.dumps(config.as_dict())
    result = model_class.auto_complete_config(config)
    if not isinstance(result, pb_utils.ModelConfig):
        raise TypeError(
            "auto_complete_config function in model '%s' must return a valid pb.ModelConfig object."
            % config.as_dict().get("name", ""))
    return json.dumps(result._model_config)


class ModelRunner:
    def __init__(self, runtime, model_class, instance_name, model_name):
        self.runtime = runtime
        self._conn = runtime.conn
        self.instance_name = instance_name
        self.model_name = model_name
        self.model = model_class()
        self._loop = None

    def initialize(self, args):
        self.runtime.model_control_allowed = True  # pb_utils.load_model & co.: initialize and execute
        if hasattr(self.model, "initialize"):
            self.model.initialize(args)
        self.runtime.bls_allowed = True

    def finalize(self):
        self.runtime.bls_allowed = False
        self.runtime.model_control_allowed = False
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if hasattr(self.model, "finalize"):
            self.model.finalize()

    # -- execute ---------------------------------------------------------------------------
    def execute(self, header, blob):
        """Runs one EXECUTE frame: `[batch id, [request, ...]]` (see _nereid_ipc)."""
        batch = header[0]
        try:
            requests = self._decode_requests(batch, header[1], blob)
        except Exception as e:  # malformed input bytes: fail the batch, keep running
            return self._fail_batch(batch, "Failed to read the request(s): %s" % e)
        builder = self._conn.builder()
        received = requests
        requests, cancelled = self._drop_cancelled(received, builder)
        if requests:
            token = current_batch.set(batch)
            try:
                result = self._call_execute(requests)
            except Exception as e:
                return self._fail_batch(batch, self._exec_error(e))
            finally:
                current_batch.reset(token)
            try:
                entries = self._check_result(requests, result, builder)
            except Exception as e:
                return self._fail_batch(batch, str(e))
        else:
            entries = []
        if cancelled:
            requests = received
            entries = self._merge_entries(len(received), entries, cancelled)
            self._conn.send(ipc.MSG_EXECUTE_DONE, [batch, entries, sorted(cancelled)], builder)
        else:
            self._conn.send(ipc.MSG_EXECUTE_DONE, [batch, entries], builder)
        if self.runtime.has_cancelled():
            for request, entry in zip(requests, entries):
                if entry is not None:
                    self.runtime.forget_request(request._key)

    def _drop_cancelled(self, requests, builder):
        """Takes out the requests whose client went away while the batch waited for this stub (the
        server hands a stub its next batch early): like requests still queued, they are answered
        CANCELLED and never run. Returns the others and {index: entry} for the cancelled ones."""
        runtime = self.runtime
        runtime.reader.poll()  # cancel marks that arrived behind this batch
        if not runtime.has_cancelled():
            return requests, None
        kept, cancelled = [], {}
        for index, request in enumerate(requests):
            if not runtime.is_cancelled(request._key):
                kept.append(request)
                continue
            error = pb_utils.TritonError(
                "[request id: %s] Request was cancelled before it ran" % (request.request_id() or "<id_unknown>"),
                pb_utils.TritonError.CANCELLED)
            response = InferenceResponse(error=error)
            if runtime.decoupled:
                runtime.send_response(request, response, True)
                cancelled[index] = None
            else:
                cancelled[index] = encode_response(builder, response, request._outputs, request._alias_inputs)
        return (kept, cancelled) if cancelled else (requests, None)

    @staticmethod
    def _merge_entries(count, entries, cancelled):
        """The batch's `count` entries in request order: the executed requests' and the cancelled ones'."""
        merged, it = [], iter(entries)
        for index in range(count):
            merged.append(cancelled[index] if index in cancelled else next(it))
        return merged

    def _exec_error(self, exc):
        return "Failed to process the request(s) for model '%s', message: %s" % (
            self.instance_name, describe_exception(exc))

    def _fail_batch(self, batch, message):
        self._conn.send(ipc.MSG_EXECUTE_DONE, [batch, message])
        self.runtime.forget_batch(batch)

    def _decode_requests(self, batch, wire_requests, blob):
        conn = self._conn
        received = InferenceRequest._received
        requests = []
        for index, (request_id, cid, flags, params, outputs, timeout, descs, context) in enumerate(wire_requests):
            inputs, mapped = decode_tensors(conn, descs, blob)
            if type(cid) is list:  # an integer beyond 2^53, as decimal digits
                cid = int(cid[0])
            requests.append(received(
                (batch, index), request_id, cid, inputs, mapped, None if outputs is None else set(outputs),
                flags, timeout, params, context))
        return requests

    def _call_execute(self, requests):
        result = self.model.execute(requests)
        if type(result) is list or not asyncio.iscoroutine(result):
            return result
        loop = self._event_loop()
        future = asyncio.run_coroutine_threadsafe(result, loop)
        if not self.runtime.decoupled:
            future.add_done_callback(lambda _f: self.runtime.reader.wake())
            return self.runtime.wait_future(future)
        future.add_done_callback(lambda f: self._after_background_execute(f, requests))
        return None

    def _after_background_execute(self, future, requests):
        exc = future.exception()
        if exc is None:
            return
        message = self._exec_error(exc)
        pb_utils.Logger.log_error(message)
        error = InferenceResponse(error=pb_utils.TritonError(message))
        for request in requests:
            if request.get_response_sender()._close():
                self.runtime.send_response(request, error, True)

    def _event_loop(self):
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, name="nereid-asyncio", daemon=True).start()
        return self._loop

    def _check_result(self, requests, result, builder):
        """Validates what execute returned; returns one entry per request (None = not answered here)."""
        if self.runtime.decoupled:
            if result is not None:
                raise ValueError(
                    "Python model '%s' is using the decoupled mode and the execute function must return None."
                    % self.instance_name)
            return [None] * len(requests)
        if result is None:
            return [None] * len(requests)
        if not isinstance(result, list):
            raise TypeError("Expected a list in the execute return, found type '%s'." % type(result).__name__)
        if len(result) != len(requests):
            raise ValueError(
                "Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
                "InferenceRequest(s) size is:%d, and InferenceResponse(s) size is:%d" % (len(requests), len(result)))
        entries = []
        for request, response in zip(requests, result):
            if response is None:
                entries.append(None)
                continue
            if not isinstance(response, InferenceResponse):
                raise TypeError(
                    "Expected an 'InferenceResponse' object in the execute function return list, found type '%s'."
                    % type(response).__name__)
            if request._sender is not None and request._sender._closed_or_answered():
                raise ValueError("Unable to send response. Non-decoupled model cannot send more than one response.")
            entries.append(encode_response(builder, response, request._outputs, request._alias_inputs))
        return entries
