"""Real-data tests read only $ADACAL_TEST_DATA: skipped with a reason without it, failed when it lacks the file,
and selected by `-m real_data` (what .ci/run's second pytest call runs)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/data/test_data_cifar.py"


def _pytest(*args, data=None):
    env = {key: value for key, value in os.environ.items() if key != "ADACAL_TEST_DATA"}
    if data is not None:
        env["ADACAL_TEST_DATA"] = str(data)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ra", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_unset_skips_with_the_reason_at_the_test():
    result = _pytest(TEST, "-k", "real_cifar10")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert (f"SKIPPED [1] {TEST}:" in result.stdout
            and "set ADACAL_TEST_DATA to a folder holding cifar10.npz" in result.stdout)


def test_a_folder_without_the_file_fails(tmp_path):
    result = _pytest(TEST, "-k", "real_cifar10", data=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "does not hold cifar10.npz" in result.stdout and "1 failed" in result.stdout


def test_the_marker_selects_the_real_data_tests_only():
    result = _pytest("--collect-only", "-m", "real_data", TEST, "tests/data/test_data_text.py",
                     "tests/benchmarks/test_benchmark_tools.py")
    assert result.returncode == 0, result.stdout + result.stderr
    collected = sorted(line for line in result.stdout.splitlines() if "::" in line)
    assert collected == sorted([
        "tests/data/test_data_cifar.py::test_real_cifar10_paper_splits_with_train_subset",
        "tests/data/test_data_text.py::test_real_newsgroups_sizes",
        "tests/benchmarks/test_benchmark_tools.py::test_pack_then_unpack_gives_the_same_labels_and_close_images_that_adacal_loads[real]",
        "tests/benchmarks/test_benchmark_tools.py::test_decoding_a_subset_matches_decoding_everything[real]",
        "tests/benchmarks/test_benchmark_tools.py::test_bad_input_is_one_error_line_and_writes_nothing[real]",
        "tests/benchmarks/test_benchmark_tools.py::test_lossless_pack_gives_back_every_image_bit_for_bit[real]",
        "tests/benchmarks/test_benchmark_tools.py::test_a_lossless_pack_for_some_seeds_loads_their_splits_exactly[real]",
        "tests/benchmarks/test_benchmark_tools.py::test_bad_lossless_options_are_one_error_line_and_write_nothing[real]",
    ])
