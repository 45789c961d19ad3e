"""sleep20: OUTPUT0 = INPUT0, after 20 ms per batch spent off the CPU (bench/distributed's stand-in for a GPU)."""

import time

import triton_python_backend_utils as pb_utils

BATCH_SECONDS = 0.02


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(BATCH_SECONDS)
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", x)]))
        return responses
