import pytest

from adacal.errors import InputError, UnknownNameError, closest_name, unknown_name
from adacal.registry import Registry


def test_unknown_name_lists_choices_and_suggests_closest():
    error = unknown_name("loss", "adafocla", ["ce", "adafocal", "focal"])
    assert isinstance(error, UnknownNameError)
    message = str(error)
    assert "Unknown loss 'adafocla'" in message
    assert "Did you mean 'adafocal'?" in message
    assert "Choices: adafocal, ce, focal." in message
    assert "\n" not in message


@pytest.mark.parametrize("typed, expected", [
    ("CIFAR10", "cifar10"), ("CIFAR-10", "cifar10"), ("FLSD53", "flsd-53"), ("label_smoothing", "label-smoothing"),
    ("ResNet20", "resnet20"), ("tiny_imagenet", "tiny-imagenet"), ("Label-Smothing", "label-smoothing"),
])
def test_case_and_separators_do_not_hide_the_suggestion(typed, expected):
    choices = ["cifar10", "cifar100", "flsd-53", "focal", "label-smoothing", "resnet20", "resnet110", "tiny-imagenet"]
    assert closest_name(typed, choices) == expected


def test_no_suggestion_when_nothing_is_close():
    assert closest_name("zzzzzz", ["ce", "focal"]) is None
    assert "Did you mean" not in str(unknown_name("loss", "zzzzzz", ["ce", "focal"]))


def test_registry_builds_and_rejects_unknown_names_and_options():
    registry: Registry[dict] = Registry("widget")

    @registry.register("two-args")
    def make(*, a=1, b=2):
        return {"a": a, "b": b}

    assert registry.build("two-args", a=5) == {"a": 5, "b": 2}
    assert "two-args" in registry and registry.names() == ["two-args"]
    with pytest.raises(UnknownNameError, match="Did you mean 'two-args'"):
        registry.build("two-arg")
    with pytest.raises(InputError, match=r"does not take option\(s\) c; it takes: a, b"):
        registry.build("two-args", c=3)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("two-args")(make)
