"""add_sub: added_output = input0 + input1, subbed_output = input0 - input1."""

import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.dtypes = {
            name: pb_utils.triton_string_to_numpy(pb_utils.get_output_config_by_name(config, name)["data_type"])
            for name in ("added_output", "subbed_output")
        }

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "add_sub_input0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "add_sub_input1").as_numpy()
            added = pb_utils.Tensor("added_output", (a + b).astype(self.dtypes["added_output"]))
            subbed = pb_utils.Tensor("subbed_output", (a - b).astype(self.dtypes["subbed_output"]))
            responses.append(pb_utils.InferenceResponse(output_tensors=[added, subbed]))
        return responses

    def finalize(self):
        pb_utils.Logger.log_info("add_sub: finalized")
