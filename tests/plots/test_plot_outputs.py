"""Where figures go and what they may replace (adacal.plots.outputs), stale temp files, literal user text, titles
that fit, and warnings held back behind the one Error line; through the library and `adacal plot`."""

import json
import os
import re
import signal
import subprocess
import sys
import warnings

from pathlib import Path

import numpy as np
import pytest

from adacal import plots
from adacal.cli import app
from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import make_report, write_json
from cli_helpers import one_line_error, runner


def _preds(path, seed=0, n=120):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), labels] += 1.0
    save_split_predictions(path, val=Predictions(logits[:40], labels[:40]), test=Predictions(logits, labels))
    return path


def _run(root, name, loss="ce"):
    run = root / name
    run.mkdir(parents=True)
    config = {"loss": loss, "model": "mlp", "dataset": "digits", "seed": 0}
    write_json(run / "config.json", make_report("train-config", config=config, results={}))
    record = {"epoch": 1, "val": {"error": 0.3, "ece_em": 0.05}, "test": {"error": 0.3, "ece_em": 0.05}}
    (run / "history.jsonl").write_text(json.dumps(record) + "\n")
    _preds(run / "predictions.npz")
    return run


def _ood_results(in_name="digits", out_name="noise"):
    """The results block of a real OOD report (so it passes the report schema), on small random logits."""
    from adacal.ood import detect_ood

    rng = np.random.default_rng(0)
    return detect_ood(3 * rng.normal(size=(40, 4)), rng.normal(size=(30, 4)), scores=("entropy",), temperature=1.5,
                      temperature_source="option", in_name=in_name, out_name=out_name)


def _invoke(args):
    return runner.invoke(app, ["plot", *map(str, args)])


# ------------------------------------------------------------------------------------------ names and replacing


def test_comparison_names_use_the_inputs_or_a_hash(tmp_path):
    runs = [_run(tmp_path / "runs", name) for name in ("ce", "adafocal")]
    assert plots.comparison_output(runs, "roc") == Path("plots") / "compare-roc-ce-adafocal.png"  # the current folder
    same = [runs[0], runs[0] / "predictions.npz"]  # both named "ce": a hash tells the pair apart
    name = plots.comparison_output(same, "reliability").name
    assert re.fullmatch(r"compare-reliability-2-inputs-[0-9a-f]{10}\.png", name)
    assert name != plots.comparison_output(list(reversed(same)), "reliability").name
    many = [_run(tmp_path / "many", f"run-with-a-long-name-{i}") for i in range(5)]
    assert re.fullmatch(r"compare-curves-5-inputs-[0-9a-f]{10}\.png", plots.comparison_output(many, "curves").name)
    odd = [_preds(tmp_path / "a b$.npz"), _preds(tmp_path / "c.npz")]
    assert plots.comparison_output(odd, "reliability") == Path("plots") / "compare-reliability-a_b-c.png"


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_figures_record_their_kind_and_only_the_same_kind_is_replaced(tmp_path, suffix):
    fig = plots.reliability_diagram([("CE", bin_statistics(np.linspace(0.3, 1, 40), np.ones(40), n_bins=4))])
    path = plots.save_figure(fig, tmp_path / f"f{suffix}", dpi=30, kind="gamma")
    assert plots.figure_kind(path) == "gamma"
    plots.check_replace(path, "gamma")  # the same kind: redrawn in place
    with pytest.raises(InputError, match=r"already exists and is a 'gamma' figure; .*--force"):
        plots.check_replace(path, "roc")
    plots.check_replace(path, "roc", force=True)
    plots.check_replace(tmp_path / f"absent{suffix}", "roc")
    other = tmp_path / f"mine{suffix}"
    other.write_bytes(b"not a figure")
    assert plots.figure_kind(other) is None
    with pytest.raises(InputError, match="a file that adacal plot did not draw"):
        plots.check_replace(other, "roc")
    plain = plots.save_figure(fig, tmp_path / f"plain{suffix}", dpi=30)  # the library without a kind
    assert plots.figure_kind(plain) is None
    (tmp_path / f"dir{suffix}").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        plots.check_replace(tmp_path / f"dir{suffix}", "roc", force=True)


def test_a_comparison_never_replaces_a_single_runs_figure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ce, af = _run(tmp_path, "ce"), _run(tmp_path, "af", loss="adafocal")
    assert _invoke(["reliability", ce, "--dpi", "30"]).exit_code == 0
    single = ce / "plots" / "reliability.png"
    before = single.read_bytes()
    result = _invoke(["reliability", ce, af, "--dpi", "30"])
    assert result.exit_code == 0, result.output
    assert single.read_bytes() == before
    assert (tmp_path / "plots" / "compare-reliability-ce-af.png").is_file()
    result = _invoke(["curves", ce, af, "--dpi", "30"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plots" / "compare-curves-ce-af.png").is_file()


def test_another_kinds_figure_is_replaced_only_with_force(tmp_path):
    ce = _run(tmp_path, "ce")
    write_json(ce / "ood.json", make_report("ood", config={}, results=_ood_results()))
    out = tmp_path / "figure.png"
    assert _invoke(["reliability", ce, "--out", out, "--dpi", "30"]).exit_code == 0
    first = out.read_bytes()
    assert _invoke(["reliability", ce, "--out", out, "--dpi", "31"]).exit_code == 0  # same kind: redrawn
    assert out.read_bytes() != first
    redrawn = out.read_bytes()
    message = one_line_error(_invoke(["roc", ce, "--out", out, "--dpi", "30"]))
    assert message == f"Error: {out} already exists and is a 'reliability' figure; give another --out, or --force to " \
                      "replace it."
    assert out.read_bytes() == redrawn
    assert _invoke(["roc", ce, "--out", out, "--dpi", "30", "--force"]).exit_code == 0
    assert plots.figure_kind(out) == "roc"
    photo = tmp_path / "holiday.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\nsomeone else's picture")
    assert "did not draw" in one_line_error(_invoke(["reliability", ce, "--out", photo]))
    assert photo.read_bytes() == b"\x89PNG\r\n\x1a\nsomeone else's picture"


def test_roc_of_a_run_with_one_report_per_ood_set(tmp_path):
    ce = _run(tmp_path, "ce")
    for out_name in ("svhn", "cifar10-c-gaussian_noise-5"):
        write_json(ce / f"ood-{out_name}.json", make_report("ood", config={}, results=_ood_results(out_name=out_name)))
    items = plots.roc_inputs([ce], ["mine"])
    assert [item.label for item in items] == ["mine", "mine"]
    assert [item.results["out"]["name"] for item in items] == ["cifar10-c-gaussian_noise-5", "svhn"]
    assert _invoke(["roc", ce, "--dpi", "30"]).exit_code == 0
    assert (ce / "plots" / "roc.png").is_file()
    empty = _run(tmp_path, "empty")
    assert "ood-*.json" in one_line_error(_invoke(["roc", empty, "--out", tmp_path / "r.png"]))


# ------------------------------------------------------------------------------------------------- temp files


def test_stale_temp_files_of_a_killed_plot_are_cleaned_and_live_ones_kept(tmp_path):
    ce = _run(tmp_path, "ce")
    folder = ce / "plots"
    folder.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # a writer process that is gone
    stale = [folder / f".reliability.png.{dead_pid}.k1ll3d_x.tmp", folder / f".gamma.svg.{dead_pid}.abcdefgh.tmp"]
    for path in stale:
        path.write_bytes(b"half a figure")
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # another plot still writing
    try:
        live = folder / f".roc.pdf.{writer.pid}.12345678.tmp"
        unrelated = [folder / f".notes.txt.{dead_pid}.abcdefgh.tmp", folder / "keep.png.abcdefgh.tmp"]
        for path in [live, *unrelated]:
            path.write_bytes(b"x")
        result = _invoke(["reliability", ce, "--dpi", "30"])
    finally:
        writer.kill()
        writer.wait()
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in stale)
    assert live.exists() and all(p.exists() for p in unrelated)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".") and p.suffix == ".png") == \
        ["reliability.png"]


def test_a_plot_killed_mid_write_leaves_a_temp_file_the_next_save_cleans(tmp_path):
    """A real process killed (SIGKILL) while writing a figure the way save_figure does: the next save cleans up."""
    code = (
        "import os, signal, sys\n"
        "from adacal.writing import write_file\n"
        "def die(handle):\n"
        "    handle.write(b'half a figure')\n"
        "    handle.flush()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "write_file(sys.argv[1], die, binary=True)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "fig.png")], capture_output=True)
    assert result.returncode == -signal.SIGKILL
    (leftover,) = [p.name for p in tmp_path.iterdir()]
    assert leftover.startswith(".fig.png.") and leftover.endswith(".tmp")
    fig = plots.reliability_diagram([("CE", bin_statistics(np.linspace(0.3, 1, 40), np.ones(40), n_bins=4))])
    plots.save_figure(fig, tmp_path / "other.png", dpi=30)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.png"]


# ----------------------------------------------------------------------------------- literal text, fitting titles


def test_user_text_is_never_mathtext(tmp_path):
    title = r"$\frac{1}{0}$"
    stats = bin_statistics(np.linspace(0.3, 1, 40), np.ones(40), n_bins=4)
    history = [{"epoch": 1, "val": {"error": 0.3, "ece_em": 0.1}}]
    figures = [
        plots.reliability_diagram([("a_b $x^2$ 100%", stats)], title=title),
        plots.training_curves({"$x^2$ a_b": [history]}, title=title),
        plots.roc_curves([plots.RocInput("$x^2$", _ood_results(out_name="$y$"))], title=title),
    ]
    for k, fig in enumerate(figures):
        (suptitle,) = fig.texts
        assert suptitle.get_text() == title and not suptitle.get_parse_math()
        for legend in fig.legends:
            assert not any(t.get_parse_math() for t in legend.get_texts() if "$" in t.get_text())
        # Drawn as its 13 characters (as wide as the plain string), not as a narrow typeset fraction.
        literal = plots.style.text_width(title, size=12, weight="bold") * fig.dpi / 72
        assert _drawn_width(fig, suptitle) == pytest.approx(literal, rel=0.05)
        plots.save_figure(fig, tmp_path / f"{k}.svg")
        plots.save_figure(fig, tmp_path / f"{k}.png", dpi=30)
    from matplotlib.figure import Figure

    as_math = Figure().suptitle(title, fontweight="bold", fontsize=12)
    assert _drawn_width(as_math.figure, as_math) < 0.5 * literal  # what mathtext would have drawn


def _drawn_width(fig, artist):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return artist.get_window_extent(canvas.get_renderer()).width


def test_cli_title_and_labels_with_math_characters_draw(tmp_path):
    preds = _preds(tmp_path / "x_y.npz")
    result = _invoke(["reliability", preds, "--title", r"$\frac{1}{0}$ 100%", "--labels", "$a^2$_b",
                      "--out", tmp_path / "r.svg"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r.svg").read_text().startswith("<?xml")


def _inside_figure(fig, artist):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box, frame = artist.get_window_extent(canvas.get_renderer()), fig.bbox
    return box.x0 >= frame.x0 - 0.5 and box.x1 <= frame.x1 + 0.5 and box.y0 >= frame.y0 and box.y1 <= frame.y1 + 0.5


@pytest.mark.parametrize("in_name, out_name", [
    ("cifar10", "svhn"),
    ("cifar10-c-gaussian_noise-5-with-a-long-description", "a-very-long-out-of-distribution-set-name-here"),
    ("x" * 90, "/some/folder/without/spaces/predictions-of-the-ood-set.npz"),
])
def test_roc_title_and_legend_are_never_cut_off(in_name, out_name):
    results = _ood_results(in_name, out_name)
    fig = plots.roc_curves([plots.RocInput("CE " + "long label " * 8, results)],
                           title="A user title " * 6)
    (ax,) = fig.axes
    assert _inside_figure(fig, ax.title)
    assert in_name[:20] in ax.title.get_text().replace("\n", "")
    assert _inside_figure(fig, fig.texts[0])
    for text in fig.legends[0].get_texts():
        assert _inside_figure(fig, text)


def test_wrap_text_keeps_lines_that_fit_and_breaks_the_rest():
    assert plots.style.wrap_text("short", 200, size=10) == "short"
    wrapped = plots.style.wrap_text("word " * 40, 150, size=10)
    assert all(plots.style.text_width(line, size=10) <= 150 for line in wrapped.split("\n"))
    assert wrapped.split() == ("word " * 40).split()
    long = plots.style.wrap_text("a" * 200, 100, size=10)
    assert long.replace("\n", "") == "a" * 200 and len(long.split("\n")) > 2


# ------------------------------------------------------------------------------------------------- warnings


def test_warnings_never_print_before_the_error_line(tmp_path, monkeypatch):
    preds = _preds(tmp_path / "p.npz")

    def noisy(*args, **kwargs):
        warnings.warn("Mean of empty slice", RuntimeWarning)
        import logging

        logging.getLogger("matplotlib.font_manager").warning("findfont: Font family 'X' not found.")
        raise InputError("Expected something else.")

    monkeypatch.setattr(plots, "reliability_inputs", noisy)
    result = _invoke(["reliability", preds, "--out", tmp_path / "r.png"])
    assert one_line_error(result) == "Error: Expected something else."
    assert result.stdout == ""
    assert not (tmp_path / "r.png").exists()


def test_warnings_of_a_successful_plot_follow_the_result(tmp_path, monkeypatch):
    preds = _preds(tmp_path / "p.npz")
    original = plots.reliability_inputs

    def noisy(*args, **kwargs):
        warnings.warn("something odd", RuntimeWarning)
        return original(*args, **kwargs)

    monkeypatch.setattr(plots, "reliability_inputs", noisy)
    result = _invoke(["reliability", preds, "--out", tmp_path / "r.png", "--dpi", "30"])
    assert result.exit_code == 0
    assert result.stdout.startswith("Wrote ") and result.stderr == "Warning: RuntimeWarning: something odd\n"


@pytest.mark.parametrize("args, match", [
    (["--bands", "bayes"], "--bands"),
    (["--band-samples", "3"], "--band-samples"),
    (["--band-level", "1.5"], "--band-level"),
    (["--min-bin-count", "-1"], "--min-bin-count"),
    (["--seed", "-1"], "--seed"),
])
def test_bad_band_options_are_one_line_and_write_nothing(tmp_path, args, match):
    preds = _preds(tmp_path / "p.npz")
    message = one_line_error(_invoke(["reliability", preds, "--out", tmp_path / "r.png", *args]))
    assert match in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


def test_bands_need_per_sample_predictions(tmp_path):
    stats = bin_statistics(np.linspace(0.3, 1, 40), np.ones(40))
    evaluate = tmp_path / "evaluate.json"
    write_json(evaluate, make_report("evaluate", config={}, results={"bins": {"equal_width": stats.to_dict()}}))
    message = one_line_error(_invoke(["reliability", evaluate, "--bands", "consistency", "--out", tmp_path / "r.png"]))
    assert "--bands consistency needs per-sample predictions" in message


def test_cli_bands_are_drawn(tmp_path, saved_figures):
    preds = _preds(tmp_path / "p.npz", n=300)
    result = _invoke(["reliability", preds, "--bands", "bootstrap", "--band-samples", "50", "--band-level", "0.8",
                      "--n-bins", "5", "--out", tmp_path / "r.png", "--dpi", "30"])
    assert result.exit_code == 0, result.output
    (ax,) = [a for a in saved_figures[0].axes if a.get_label() == "reliability:0"]
    assert [c.get_gid() for c in ax.collections if c.get_gid()] == ["band:bootstrap"]
    assert "80 % bootstrap interval of accuracy" in [t.get_text() for t in saved_figures[0].legends[0].get_texts()]
    assert os.path.getsize(tmp_path / "r.png") > 0


def test_cli_smooth_curve_is_drawn_and_needs_per_sample_predictions(tmp_path, saved_figures):
    preds = _preds(tmp_path / "p.npz", n=300)
    result = _invoke(["reliability", preds, "--smooth", "--out", tmp_path / "r.png", "--dpi", "30"])
    assert result.exit_code == 0, result.output
    (ax,) = [a for a in saved_figures[0].axes if a.get_label() == "reliability:0"]
    assert [line.get_gid() for line in ax.lines if line.get_gid()] == ["smooth"]
    stats = bin_statistics(np.linspace(0.3, 1, 40), np.ones(40))
    evaluate = tmp_path / "evaluate.json"
    write_json(evaluate, make_report("evaluate", config={}, results={"bins": {"equal_width": stats.to_dict()}}))
    message = one_line_error(_invoke(["reliability", evaluate, "--smooth", "--out", tmp_path / "s.png"]))
    assert "--smooth needs per-sample predictions" in message
    assert not (tmp_path / "s.png").exists()


def test_a_comparison_lands_outside_the_folder_of_runs_so_a_glob_of_it_still_names_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = [_run(tmp_path / "runs", name) for name in ("ce", "af")]
    assert _invoke(["reliability", *runs, "--dpi", "30"]).exit_code == 0
    assert (tmp_path / "plots" / "compare-reliability-ce-af.png").is_file()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["af", "ce"]  # runs/* is still only runs
    result = _invoke(["curves", *sorted((tmp_path / "runs").iterdir()), "--dpi", "30"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("crc", [b"fghi", b"\x00\x01\x02\x03", b"-abc"])
def test_a_png_figures_kind_ends_with_its_text_chunk_whatever_bytes_follow(tmp_path, crc):
    """The kind is read up to the tEXt chunk's recorded length: a CRC whose bytes read as letters ('shift' + 'fghi')
    is not part of it (a figure was once refused as a 'shiftf' figure when redrawn)."""
    import struct

    from adacal.plots.outputs import figure_kind

    text = b"Comment\x00adacal plot shift"
    path = tmp_path / "figure.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(text)) + b"tEXt" + text + crc + b"\x00" * 16)
    assert figure_kind(path) == "shift"
