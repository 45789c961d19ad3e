"""`pb_utils.ModelConfig`: the object `auto_complete_config` receives and returns."""

import json

_INPUT_KEYS = {"name", "data_type", "dims", "optional"}
_OUTPUT_KEYS = {"name", "data_type", "dims"}


class ModelConfig:
    def __init__(self, model_config):
        self._model_config = json.loads(model_config)
        self._model_config.setdefault("input", [])
        self._model_config.setdefault("output", [])
        self._model_config.setdefault("max_batch_size", 0)
        self._model_config.setdefault("name", "")

    def as_dict(self):
        return self._model_config

    def set_max_batch_size(self, max_batch_size):
        current = self._model_config.get("max_batch_size", 0)
        if current > max_batch_size:
            raise ValueError(
                "configuration specified max_batch_size " + str(current)
                + ", but in auto-complete-config function for model '"
                + self._model_config["name"] + "' specified max_batch_size "
                + str(max_batch_size))
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    "Configuration specified scheduling_choice as '" + other
                    + "', but auto-complete-config function for model '"
                    + self._model_config["name"] + "' tries to set scheduling_choice as 'dynamic_batching'")
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input):
        self._add_tensor("input", input, _INPUT_KEYS)

    def add_output(self, output):
        self._add_tensor("output", output, _OUTPUT_KEYS)

    def set_model_transaction_policy(self, transaction_policy_dict):
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config function for model '"
                    + self._model_config["name"] + "' contains property other than 'decoupled'")
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != wanted:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model '"
                    + self._model_config["name"] + "', which is already set to "
                    + str(policy["decoupled"]))
            policy["decoupled"] = wanted

    def _add_tensor(self, kind, tensor, allowed):
        model = self._model_config["name"]
        if not isinstance(tensor, dict):
            raise ValueError(
                "model " + kind + " in auto-complete-config function for model '" + model
                + "' must be a dict")
        for key in tensor:
            if key not in allowed:
                raise ValueError(
                    "model " + kind + " in auto-complete-config function for model '" + model
                    + "' contains property other than " + ", ".join(sorted(allowed)))
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                raise ValueError(
                    kind + " '" + str(tensor.get("name", "")) + "' in auto-complete-config function for model '"
                    + model + "' is missing '" + key + "' property.")
        for existing in self._model_config[kind]:
            if existing.get("name") == tensor["name"]:
                self._merge(kind, existing, tensor, model)
                return
        self._model_config[kind].append(dict(tensor))

    @staticmethod
    def _merge(kind, existing, tensor, model):
        name = tensor["name"]
        old_type = existing.get("data_type", "TYPE_INVALID")
        if old_type not in ("TYPE_INVALID", tensor["data_type"]):
            raise ValueError(
                "unable to load model '" + model + "', configuration expects datatype "
                + old_type + " for " + kind + " '" + name + "', model provides " + tensor["data_type"])
        old_dims = existing.get("dims", [])
        if old_dims and list(old_dims) != list(tensor["dims"]):
            raise ValueError(
                "model '" + model + "', tensor '" + name + "': the model expects dims "
                + str(list(tensor["dims"])) + " but the model configuration specifies dims "
                + str(list(old_dims)))
        if "optional" in tensor and "optional" in existing and existing["optional"] != tensor["optional"]:
            raise ValueError(
                "model '" + model + "', tensor '" + name + "': the model expects optional "
                + str(tensor["optional"]) + " but the model configuration specifies optional "
                + str(existing["optional"]))
        existing["data_type"] = tensor["data_type"]
        existing["dims"] = list(tensor["dims"])
        if "optional" in tensor:
            existing["optional"] = tensor["optional"]
