"""`pb_utils.MetricFamily` and `Metric`: a python model's own Prometheus metrics.

As in Triton's python backend, the values live in the server: each family and metric is created
there (a METRIC_REQUEST frame answered by a METRIC_RESULT frame, so that a name clash raises in
the model), `value()` asks the server for the value it exports on the metrics port, and
`increment` / `set` / `observe` are sent without waiting (they are checked here first, with
Triton's words, and the server applies them in order). Families and metrics are removed when their
objects are deleted, and whatever a model instance still holds when it is unloaded.
See libs/backends/src/python/metric-bridge.ts for the server's side.
"""

import _nereid_types
from _nereid_errors import TritonModelException

MSG_METRIC_REQUEST = 40
MSG_METRIC_RESULT = 41

_KIND_NAMES = {0: "COUNTER", 1: "GAUGE", 2: "HISTOGRAM"}
_KIND_WORDS = {
    0: "TRITONSERVER_METRIC_KIND_COUNTER",
    1: "TRITONSERVER_METRIC_KIND_GAUGE",
    2: "TRITONSERVER_METRIC_KIND_HISTOGRAM",
}


class MetricKind(int):
    """Triton's `pb_utils.MetricKind` values (COUNTER, GAUGE, HISTOGRAM)."""

    def __repr__(self):
        return "<MetricKind.%s: %d>" % (_KIND_NAMES[int(self)], int(self))

    @property
    def name(self):
        return _KIND_NAMES[int(self)]


def _runtime():
    runtime = _nereid_types.runtime
    if runtime is None:
        raise TritonModelException("custom metrics are only available inside a running model")
    return runtime


def _call(header):
    """A request whose answer is awaited; returns the answer or raises its error."""
    answer = _runtime().metric_call(header, True)
    error = answer.get("e")
    if error is not None:
        raise TritonModelException(error)
    return answer


def _send(header):
    runtime = _nereid_types.runtime
    if runtime is not None:
        try:
            runtime.metric_call(header, False)
        except Exception:  # the server is gone (interpreter shutting down): nothing to delete
            pass


class Metric:
    """One metric (a label set) of a family; its value is the server's."""

    def __init__(self, family, labels, buckets):
        self._family = family
        self._labels = labels
        self._buckets = buckets
        self._cleared = True  # until the server holds it
        header = {"op": "metric_new", "n": family.name, "l": labels}
        if buckets is not None:
            header["b"] = buckets
        _call(header)
        self._cleared = False

    def _check(self, what):
        if self._cleared or self._family._deleted:
            raise TritonModelException(
                "%s: Invalid metric operation as the corresponding 'MetricFamily' has been deleted. "
                "The 'MetricFamily' object should be deleted AFTER its corresponding 'Metric' objects "
                "have been deleted." % what)

    def _update(self, op, value, what):
        self._check(what)
        value = float(value)
        kind = self._family.kind
        word = _KIND_WORDS[int(kind)]
        if op == "increment":
            if kind == MetricFamily.HISTOGRAM:
                raise TritonModelException("%s: %s does not support Increment" % (what, word))
            if kind == MetricFamily.COUNTER and value < 0.0:
                raise TritonModelException(
                    "%s: %s can only be incremented monotonically by non-negative values." % (what, word))
        elif op == "set" and kind != MetricFamily.GAUGE:
            raise TritonModelException("%s: %s does not support Set" % (what, word))
        elif op == "observe" and kind != MetricFamily.HISTOGRAM:
            raise TritonModelException("%s: %s does not support Observe" % (what, word))
        _runtime().metric_call({"op": op, "n": self._family.name, "l": self._labels, "v": value}, False)

    def increment(self, value):
        self._update("increment", value, "Failed to increment metric value")

    def set(self, value):
        self._update("set", value, "Failed to set metric value")

    def observe(self, value):
        self._update("observe", value, "Failed to observe metric value")

    def value(self):
        self._check("Failed to get metric value")
        if self._family.kind == MetricFamily.HISTOGRAM:
            raise TritonModelException(
                "Failed to get metric value: %s does not support Value" % _KIND_WORDS[2])
        try:
            return float(_call({"op": "value", "n": self._family.name, "l": self._labels})["v"])
        except TritonModelException as e:
            raise TritonModelException("Failed to get metric value: %s" % e) from None

    def _clear(self):
        if not self._cleared:
            self._cleared = True
            _send({"op": "metric_delete", "n": self._family.name, "l": self._labels})

    def __del__(self):
        try:
            self._clear()
        except Exception:
            pass


class MetricFamily:
    """A family of metrics of one kind; a name used twice with the same kind is one family."""

    COUNTER = MetricKind(0)
    GAUGE = MetricKind(1)
    HISTOGRAM = MetricKind(2)

    def __init__(self, name, description, kind):
        if name is None or description is None or kind is None:
            raise TypeError("MetricFamily(): name, description and kind must not be None")
        if not isinstance(kind, int) or int(kind) not in _KIND_NAMES:
            raise TritonModelException("Unknown metric kind")
        self.name = str(name)
        self.description = str(description)
        self.kind = MetricKind(int(kind))
        self._deleted = False
        try:
            _call({"op": "family_new", "n": self.name, "d": self.description, "k": self.kind.name})
        except TritonModelException as e:
            self._deleted = True  # the server holds nothing for this object
            raise TritonModelException("Error when creating MetricFamily: %s" % e) from None

    def Metric(self, labels=None, buckets=None):
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, (list, tuple)):
                raise TritonModelException("Failed to create metric. Buckets must be a list.")
            if self.kind != MetricFamily.HISTOGRAM:
                raise TritonModelException("Failed to create metric. Unexpected buckets found.")
            buckets = [float(b) for b in buckets]
        elif self.kind == MetricFamily.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        clean = {}
        for key, value in (labels or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TritonModelException("Failed to create metric. Label names and values must be strings.")
            clean[key] = value
        try:
            return Metric(self, clean, buckets)
        except TritonModelException as e:
            raise TritonModelException("Error when creating Metric: %s" % e) from None

    def __del__(self):
        try:
            if not self._deleted:
                self._deleted = True
                _send({"op": "family_delete", "n": self.name})
        except Exception:
            pass


__all__ = ["Metric", "MetricFamily", "MetricKind", "MSG_METRIC_REQUEST", "MSG_METRIC_RESULT"]
