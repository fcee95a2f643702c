"""Architectures by name: CIFAR ResNets / WRN / DenseNet, small CPU models, and any torchvision classifier.

    from adacal.models import build_model, default_model
    model = build_model(default_model("cifar10"), num_classes=10, input_shape=(3, 32, 32))
"""

from adacal.models.registry import (
    INIT_ONLY_OPTIONS,
    MODEL_INPUT_KINDS,
    MODELS,
    TORCHVISION_PREFIX,
    build_model,
    check_input_shape,
    check_model_input,
    count_parameters,
    default_model,
    model_input_kind,
    model_names,
    model_options_for_dataset,
    rebuild_options,
    torchvision_model_names,
)
from adacal.models.small import read_glove

__all__ = [
    "INIT_ONLY_OPTIONS",
    "MODELS",
    "MODEL_INPUT_KINDS",
    "TORCHVISION_PREFIX",
    "build_model",
    "check_input_shape",
    "check_model_input",
    "count_parameters",
    "default_model",
    "model_input_kind",
    "model_names",
    "model_options_for_dataset",
    "read_glove",
    "rebuild_options",
    "torchvision_model_names",
]
