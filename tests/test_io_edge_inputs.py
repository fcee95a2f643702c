"""The I/O layer and the first public surface: writes that keep what they replace, run folders found from any
spelling, names and numbers refused with one clear sentence."""

from __future__ import annotations

import errno
import os
import stat

import numpy as np
import pytest
import torch

import adacal
from adacal.checks import check_finite, check_in_range, check_integer, renamed_options, shown
from adacal.errors import InputError, UnknownNameError, unknown_name
from adacal.registry import Registry
from adacal.reports import make_report, new_run_dir, to_jsonable, write_json
from adacal.runs import find_run_folder, require_run_folder
from adacal.writing import check_output, remove_stale_temp_files, write_file


def _temp_files(folder) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


# --- writing -----------------------------------------------------------------------------------------------------


def test_stale_temp_clean_up_leaves_the_temp_file_of_another_target_alone(tmp_path):
    # `.a.json.999999.<pid>.<8>.tmp` is a live writer's temp file for `a.json.999999`, not a dead one's for `a.json`.
    other = tmp_path / f".a.json.999999.{os.getpid()}.abcdefgh.tmp"
    other.write_text("in progress")
    dead = tmp_path / ".a.json.999999.abcdefgh.tmp"  # a.json's, writer 999999 gone
    dead.write_text("left over")
    remove_stale_temp_files(tmp_path / "a.json")
    assert other.exists() and not dead.exists()


def test_replacing_a_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "secret.json"
    path.write_text("{}")
    os.chmod(path, 0o600)
    write_json(path, {"a": 1})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text() == '{\n  "a": 1\n}\n'


def test_a_symlink_loop_is_refused_and_left_a_link(tmp_path):
    first, second = tmp_path / "one.json", tmp_path / "two.json"
    os.symlink(second, first)
    os.symlink(first, second)
    with pytest.raises(InputError, match="symbolic link loop"):
        write_json(first, {})
    with pytest.raises(InputError, match=r"Expected --out to be a file path, but .* is a symbolic link loop\."):
        check_output(first, flag="--out")
    assert os.path.islink(first) and os.path.islink(second) and not _temp_files(tmp_path)


@pytest.mark.parametrize("path", ["", "a\0b.json"])
def test_an_empty_path_or_a_nul_byte_is_an_input_error(tmp_path, path):
    with pytest.raises(InputError, match="Expected --out to be a file path, got"):
        check_output(path, flag="--out")
    with pytest.raises(InputError, match="to be a file path, got"):
        write_json(path, {})


def test_a_full_disk_leaves_the_original_and_no_temp_file(tmp_path):
    path = tmp_path / "keep.json"
    path.write_text("original")

    def write(handle):
        handle.write("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(InputError, match="No space left on device"):
        write_file(path, write)
    assert path.read_text() == "original" and not _temp_files(tmp_path)


def test_a_refused_rename_leaves_the_original_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.json"
    path.write_text("original")

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(InputError, match="Permission denied"):
        write_json(path, {"a": 1})
    assert path.read_text() == "original" and not _temp_files(tmp_path)


def test_links_to_a_file_stay_links(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    os.symlink("target.json", tmp_path / "relative.json")
    write_json(tmp_path / "relative.json", {"b": 2})
    assert os.path.islink(tmp_path / "relative.json") and target.read_text() == '{\n  "b": 2\n}\n'


# --- reports -----------------------------------------------------------------------------------------------------


def test_to_jsonable_takes_bfloat16_tensors_and_nan():
    value = to_jsonable({"a": torch.tensor([1.5, float("nan")], dtype=torch.bfloat16), "b": torch.tensor(2.0)})
    assert value == {"a": [1.5, None], "b": 2.0}


def test_keys_that_collide_as_strings_are_refused_not_dropped(tmp_path):
    with pytest.raises(InputError, match="distinct as strings, got two keys written '1'"):
        write_json(tmp_path / "r.json", {1: "a", "1": "b"})
    assert not os.path.exists(tmp_path / "r.json")
    assert to_jsonable({1: (1, (2, 3)), np.int64(2): np.float32(0.5)}) == {"1": [1, [2, 3]], "2": 0.5}


def test_make_report_on_a_missing_input_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"Expected the report's input .*missing.npz to be a readable file"):
        make_report("evaluate", config={}, results={}, input_path=tmp_path / "missing.npz")


@pytest.mark.parametrize("name", ["", " ", ".", "..", "../escape", "a/b", "/tmp/elsewhere", "a\0b"])
def test_new_run_dir_refuses_names_that_are_not_one_folder_name(tmp_path, name):
    with pytest.raises(InputError, match=r"Expected --name to be a folder name \(no '/', not '\.' or '\.\.'\)"):
        new_run_dir(tmp_path / "runs", name, unique=False)
    assert not os.path.exists(tmp_path / "escape") and not os.path.exists(tmp_path / "runs" / "-2")


def test_new_run_dir_takes_spaces_and_unicode_and_numbers_collisions(tmp_path):
    first = new_run_dir(tmp_path, "my run ü")
    assert first.name == "my run ü" and new_run_dir(tmp_path, "my run ü").name == "my run ü-2"


# --- runs --------------------------------------------------------------------------------------------------------


def test_find_run_folder_resolves_dot_dot(tmp_path):
    run = tmp_path / "runs" / "r1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    assert find_run_folder(run / "..") is None  # runs/, which holds the run, is not the run
    found = find_run_folder(run / "checkpoints" / "..")
    assert found is not None and found.root == run.resolve()
    assert find_run_folder(run / "checkpoints" / "last.pt").root == run
    with pytest.raises(InputError, match="Expected a run folder or checkpoint, got an empty path."):
        require_run_folder("")


# --- registry and errors ------------------------------------------------------------------------------------------


def test_registry_refuses_a_name_that_is_not_a_string():
    registry: Registry[int] = Registry("loss")
    registry.register("focal")(lambda: 1)
    with pytest.raises(InputError, match=r"Expected the loss name to be one of focal; got None\."):
        registry.get(None)  # type: ignore[arg-type]
    assert ["focal"] not in registry and "focal" in registry
    assert registry.get("Focal")() == 1 and "FOCAL" in registry  # names are read case-insensitively
    with pytest.raises(UnknownNameError, match=r"Unknown loss 'Focl'\. Did you mean 'focal'\?"):
        registry.get("Focl")


def test_unknown_name_with_no_choices_reads_as_a_sentence():
    assert str(unknown_name("thing", "x", [])) == "Unknown thing 'x'. No thing is available."


# --- checks ------------------------------------------------------------------------------------------------------


def test_huge_integers_are_input_errors_with_a_readable_message():
    with pytest.raises(InputError, match=r"Expected --lr to be a finite number, got an integer of about 401 digits\."):
        check_finite(10**400, "--lr")
    with pytest.raises(InputError, match="got an integer of about 401 digits"):
        check_in_range(10**400, "--p", 0, 1)
    with pytest.raises(InputError, match="got an integer of about 5001 digits"):
        check_integer(10**5000, "--n-bins", maximum=5)
    assert shown(np.bool_(True)) == "True" and shown(np.int64(3)) == "3"


def test_renamed_options_compares_arrays_and_nan():
    same = np.array([1.0, 2.0])
    assert renamed_options({"a": same, "b": same.copy()}, {"a": "b"})["b"] is same
    assert np.isnan(renamed_options({"a": float("nan"), "b": float("nan")}, {"a": "b"})["b"])
    with pytest.raises(InputError, match="Expected one value for b"):
        renamed_options({"a": np.array([1.0]), "b": np.array([2.0])}, {"a": "b"})


# --- the public surface ------------------------------------------------------------------------------------------


def test_dir_shows_the_api_not_the_helpers():
    assert not {"Any", "annotations", "importlib", "TYPE_CHECKING", "version"} & set(dir(adacal))
    assert set(adacal.__all__) <= set(dir(adacal))
    names = set(dir(adacal.calibrators))
    assert not {"Any", "annotations"} & names
    assert set(adacal.calibrators.__all__) <= names and "temperature" in names  # submodules stay visible
