"""string_upper: each UTF-8 element of text_input, upper-cased, in text_output (same shape)."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            texts = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
            upper = np.array(
                [t.decode("utf-8").upper().encode("utf-8") for t in texts.reshape(-1)], dtype=np.object_
            ).reshape(texts.shape)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("text_output", upper)]))
        return responses
