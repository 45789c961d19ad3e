'use strict';
// Python model sources shared by the python-backend benchmarks.

/** INT32 [1,16] x2 -> OUTPUT0 = sum, OUTPUT1 = difference: the same work as the ONNX `simple` model. */
const SUM_MODEL = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]))
        return responses
`;

module.exports = { SUM_MODEL };
