"""The options of a resumed run: the checkpoint's config with the few a resume may change (`merge_resume_config`),
and which options defining a run differ between a checkpoint and its run's config.json (`defining_differences`).

A resumed run continues exactly: every option that shapes the training comes from the checkpoint, and one typed again
with another value is refused in one line naming the flag, not silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from adacal.conventions import LOSS_OPTION_FLAGS
from adacal.errors import CheckpointError, InputError
from adacal.training.config import (
    TrainConfig,
    check_loss_options,
    check_structure,
    resolved_loss_options,
    validate_config,
)
from adacal.training.update_schedule import parse_update_every

# Options a resumed run may change; every other option comes from the checkpoint.
RESUME_MAY_CHANGE = ("epochs", "device", "workers", "data_dir", "resume")


def merge_resume_config(saved: dict[str, Any], given: TrainConfig, *, source: str = "the checkpoint") -> TrainConfig:
    """The saved run's config with the options that may change on resume; a conflicting option is an error. The saved
    options (read from `source`, a checkpoint) have their types checked as a TrainConfig built in Python has
    (`check_structure`): names and paths as strings, option dicts as dicts, milestones as epoch numbers."""
    base = TrainConfig.from_dict(saved)
    try:
        check_structure(base)
    except InputError as exc:
        raise CheckpointError(f"{str(exc).rstrip('.')} (in the options saved in {source}).") from None
    if base.loss_reduction is None:  # a saved config without loss_reduction trained with the mean
        base.loss_reduction = "mean"
    given_values = given.to_dict()
    saved_values = base.to_dict()
    for key, value in given_values.items():
        if value is None or key in RESUME_MAY_CHANGE or key == "resume":
            continue
        if key in ("model_options", "loss_options") and not value:
            continue
        if key == "name":
            raise InputError("--name names a new run folder; it does not apply to --resume (the run keeps its folder).")
        if key == "loss_options":  # the saved options are resolved (every default): compare those that were typed
            saved_options = saved_values.get(key) or {}
            for option, given_value in value.items():
                if option in saved_options and _normalise(given_value) == _normalise(saved_options[option]):
                    continue
                if option not in saved_options and isinstance(base.loss, str):
                    # "--gamma does not apply to --loss ...", read beside the run's options (mdca's --mdca-base)
                    check_loss_options(base.loss, {**saved_options, option: given_value})
                flag = LOSS_OPTION_FLAGS.get(option, "--" + option.replace("_", "-"))
                raise InputError(
                    f"{flag} {given_value!r} conflicts with the resumed run's {_repr(saved_options.get(option))}; "
                    "on --resume the loss options come from the run."
                )
            continue
        if key == "model_options":  # --embeddings (the only model option the command line sets)
            saved_options = saved_values.get(key) or {}
            for option, given_value in value.items():
                if _same_option_value(given_value, saved_options.get(option)):
                    continue
                flag = "--" + option.replace("_", "-")
                had = (f"the resumed run's {_repr(saved_options[option])}" if option in saved_options
                       else f"the resumed run, trained without {flag}")
                raise InputError(
                    f"{flag} {given_value!r} conflicts with {had}; on --resume the model comes from the run's "
                    f"checkpoint (leave out {flag})."
                )
            continue
        if key == "update_every" and _same_schedule(value, saved_values.get(key)):
            continue
        if key == "dataset" and _same_user_data(value, saved_values.get(key)):
            continue
        if _normalise(value) != _normalise(saved_values.get(key)):
            flag = "--" + key.replace("_", "-")
            allowed = ", ".join("--" + k.replace("_", "-") for k in RESUME_MAY_CHANGE if k != "resume")
            if isinstance(value, bool):  # an on/off flag (--amp/--no-amp): name both as typed, not True/False
                spelled = {True: flag, False: "--no-" + flag[2:]}
                raise InputError(
                    f"{spelled[value]} conflicts with the resumed run, trained with {spelled[not value]}; "
                    f"on --resume only {allowed} may change."
                )
            raise InputError(
                f"{flag} {value!r} conflicts with the resumed run's {_repr(saved_values.get(key))}; "
                f"on --resume only {allowed} may change."
            )
    for key in RESUME_MAY_CHANGE:
        if given_values.get(key) is not None:
            setattr(base, key, given_values[key])
    validate_config(base)
    return base


# Options that do not define what a run trains: where its folder is and what it is called (a checkpoint of a run
# trained identically under another name continues this one exactly), and those a resume may change.
NOT_DEFINING = frozenset({*RESUME_MAY_CHANGE, "name", "out"})


def defining_differences(saved: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """'--loss ce (config.json: adafocal)' for each option that defines a run (all but NOT_DEFINING) on which a
    checkpoint's config (`saved`) and its run's config.json (`recorded`) disagree; an option only one of them records
    (written by another adacal version) is not compared, and loss options are compared with every default filled in."""

    def canonical(key: str, config: dict[str, Any]) -> Any:
        value = config.get(key)
        if key == "loss_reduction" and value is None:  # a config without loss_reduction trained with the mean
            return "mean"
        if key == "update_every" and value is not None:
            try:
                return parse_update_every(value).spec
            except InputError:
                return value
        if key == "milestones" and value is not None and isinstance(value, (list, tuple)):
            return [int(m) for m in value] if all(isinstance(m, int) for m in value) else value
        return value

    differences = []
    for key in (f.name for f in dataclasses.fields(TrainConfig) if f.name not in NOT_DEFINING):
        if key not in saved or key not in recorded:
            continue
        if key == "loss_options":
            if saved.get("loss") == recorded.get("loss"):  # otherwise the loss itself is named
                differences += _loss_option_differences(str(saved.get("loss")), saved.get(key), recorded.get(key))
            continue
        mine, theirs = canonical(key, saved), canonical(key, recorded)
        if _normalise(mine) != _normalise(theirs):
            differences.append(f"--{key.replace('_', '-')} {_shown(mine)} (config.json: {_shown(theirs)})")
    return differences


def _loss_option_differences(loss: str, saved: Any, recorded: Any) -> list[str]:
    if not isinstance(saved, dict) or not isinstance(recorded, dict):
        return [] if saved == recorded else [f"loss options {_shown(saved)} (config.json: {_shown(recorded)})"]
    try:  # every default filled in: a config that lists only the options typed matches one that lists them all
        saved, recorded = resolved_loss_options(loss, saved), resolved_loss_options(loss, recorded)
    except InputError:
        pass
    differences = []
    for option in sorted(set(saved) | set(recorded)):
        if _normalise(saved.get(option)) != _normalise(recorded.get(option)):
            flag = LOSS_OPTION_FLAGS.get(option, "--" + option.replace("_", "-"))
            differences.append(f"{flag} {_shown(saved.get(option))} (config.json: {_shown(recorded.get(option))})")
    return differences


def _same_user_data(given: Any, saved: Any) -> bool:
    """A --dataset path typed again on --resume (relative, or with ~) names the run's own data when it resolves to the
    absolute path the run recorded."""
    from adacal.data.user_data import user_data_path

    path = user_data_path(given)
    return path is not None and str(path) == str(saved)


def _same_schedule(given: Any, saved: Any) -> bool:
    """Two --update-every values that update at the same batches ('paper' and 'epoch:25,100:40,1', '5' and ' 5')."""
    try:
        return parse_update_every(given).segments == parse_update_every(saved).segments
    except InputError:
        return False


def _same_option_value(given: Any, saved: Any) -> bool:
    """A model option as typed now and as the run recorded it; a path names the same file however it is spelled."""
    if _normalise(given) == _normalise(saved):
        return True
    if isinstance(given, (str, os.PathLike)) and isinstance(saved, (str, os.PathLike)):
        first, second = os.path.expanduser(str(given)), os.path.expanduser(str(saved))
        try:
            return os.path.samefile(first, second)
        except OSError:
            return os.path.abspath(first) == os.path.abspath(second)
    return False


def _repr(value: Any) -> str:
    """A resumed run's value in a conflict message: as typed (repr), an option it did not set as 'none'."""
    return "none" if value is None else repr(value)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    return str(value)


def _normalise(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


__all__ = ["NOT_DEFINING", "RESUME_MAY_CHANGE", "defining_differences", "merge_resume_config"]
