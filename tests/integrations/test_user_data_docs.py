"""docs/integrations.md, section 5 ("`adacal train` on your own data"): its python blocks run as written."""

import tempfile

import pytest

from doc_blocks import run_section


@pytest.mark.slow
def test_the_own_data_section_runs(one_torch_thread, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the blocks' mkdtemp() folders go under tmp_path
    with one_torch_thread():
        namespace = run_section("on your own data")
    assert namespace["root"].parent == tmp_path
    assert (namespace["root"] / "runs" / "pets" / "config.json").is_file()
    assert (namespace["root"] / "runs" / "flowers" / "calibrate.json").is_file()
