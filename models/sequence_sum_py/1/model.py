"""OUTPUT = the running sum of INPUT over the requests of the request's sequence.

The sequence batcher fills the control inputs START, END and CORRID of every request; the model
checks them against what the request itself says (request.correlation_id() and request.flags(),
as Triton's python backend exposes them) and keys its sums by the correlation id. START restarts
the sum at 0; END forgets it after answering. CORRID may be an integer or a string (TYPE_STRING
CORRID: one BYTES element).
"""
import numpy as np
import triton_python_backend_utils as pb_utils

START_FLAG = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END_FLAG = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END


def scalar(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0]


def corrid_value(raw):
    if isinstance(raw, (bytes, np.bytes_)):
        return bytes(raw).decode("utf-8")
    return int(raw)


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        seen = set()
        for request in requests:
            start = int(scalar(request, "START"))
            end = int(scalar(request, "END"))
            corrid = corrid_value(scalar(request, "CORRID"))
            flags = request.flags()
            problem = None
            if corrid != request.correlation_id():
                problem = f"CORRID {corrid!r} != correlation_id() {request.correlation_id()!r}"
            elif bool(start) != bool(flags & START_FLAG) or bool(end) != bool(flags & END_FLAG):
                problem = f"START/END {start}/{end} disagree with flags() {flags}"
            elif corrid in seen:
                problem = f"sequence {corrid!r} has two requests in one execution"
            if problem is not None:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(problem)))
                continue
            seen.add(corrid)
            total = (0 if start else self.sums.get(corrid, 0)) + int(scalar(request, "INPUT"))
            if end:
                self.sums.pop(corrid, None)
            else:
                self.sums[corrid] = total
            out = np.array([[total]], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
