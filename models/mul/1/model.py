"""mul: mul_output = mul_input0 * mul_input1."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "mul_input0").as_numpy()
            y = pb_utils.get_input_tensor_by_name(request, "mul_input1").as_numpy()
            product = pb_utils.Tensor("mul_output", x * y)
            responses.append(pb_utils.InferenceResponse([product]))
        return responses
