"""AdaFocal's figures say what the history says (#32 item 2): `plot gamma` panels share one y-scale per row with plain
tick labels (0.9840–0.9847 never drawn as motion), and every gap in a series of `plot gamma` or `plot correspondence`
is marked and explained in its panel."""

import numpy as np
import pytest

from adacal import plots
from adacal.plots.adafocal import GAP_LEGEND, gap_text
from adacal.plots.style import figure_style

M = 3


def _history(epochs=6, gammas=None, train_counts=None, val_counts=None, seed=0):
    """An AdaFocal history of M bins; `gammas(epoch, bin)`, `train_counts(epoch, bin)` and `val_counts(epoch, bin)`
    override the defaults (γ random in [0.5, 3], 50 training and 20 validation samples per bin)."""
    rng = np.random.default_rng(seed)
    records = []
    for epoch in range(1, epochs + 1):
        edges = np.concatenate([[0.0], np.sort(rng.uniform(0.4, 0.95, M - 1)), [1.0]])
        confidence = (edges[:-1] + edges[1:]) / 2
        update = {
            "edges": edges.tolist(),
            "gammas": [float(gammas(epoch, b)) if gammas else float(rng.uniform(0.5, 3.0)) for b in range(M)],
            "val_confidence": confidence.tolist(),
            "val_accuracy": (confidence - rng.uniform(-0.05, 0.05, M)).clip(0, 1).tolist(),
            "counts": [int(val_counts(epoch, b)) if val_counts else 20 for b in range(M)],
        }
        records.append({"epoch": epoch, "adafocal": {
            "updates": [update], "train_confidence": (confidence + 0.01).tolist(),
            "train_counts": [int(train_counts(epoch, b)) if train_counts else 50 for b in range(M)]}})
    return records


def _axes(fig, label):
    (ax,) = [a for a in fig.axes if a.get_label() == label]
    return ax


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with figure_style():
        fig.canvas.draw()
    return fig


def _legend(fig):
    return [t.get_text() for t in fig.legends[0].get_texts()]


# -------------------------------------------------------------------------------------------- one scale per row


def test_gamma_panels_share_one_y_scale_per_row():
    # bin 0's γ climbs to 5, bins 1 and 2 sit near 1: on one scale they are flat, as they are
    fig = _drawn(plots.gamma_dynamics(_history(gammas=lambda e, b: e if b == 0 else 1.0 + 0.01 * e)))
    for row in ("error", "gamma", "edges"):
        axes = [_axes(fig, f"{row}:bin-{b}") for b in range(M)]
        assert all(axes[0].get_shared_y_axes().joined(axes[0], ax) for ax in axes[1:]), row
        assert len({ax.get_ylim() for ax in axes}) == 1, row
        assert [ax.yaxis.get_tick_params()["labelleft"] for ax in axes[1:]] == [False, False]  # read off column 0
    low, high = _axes(fig, "gamma:bin-2").get_ylim()
    assert low <= 1.0 and high >= 6.0
    assert not [t for ax in fig.axes for t in ax.texts if t.get_gid() == "note:span"]  # nothing tiny to say


def test_gamma_tick_labels_are_plain_values_and_a_sliver_of_motion_says_its_span():
    # the digits run's bin 14: γ from 0.98474 down to 0.98394; alone, matplotlib drew "+9.84e-1" and 0 to 7
    values = np.linspace(0.98474, 0.98394, 6)
    fig = _drawn(plots.gamma_dynamics(_history(gammas=lambda e, b: values[e - 1]), bins=[2]))
    gamma_ax = _axes(fig, "gamma:bin-2")
    formatter = gamma_ax.yaxis.get_major_formatter()
    assert formatter.get_useOffset() is False and formatter.get_offset() == ""
    labels = [t.get_text() for t in gamma_ax.get_yticklabels() if t.get_text()]
    assert labels and all(label.startswith("0.98") for label in labels)
    (note,) = [t for t in gamma_ax.texts if t.get_gid() == "note:span"]
    assert note.get_text() == "γ spans only 0.0008 (0.98394 to 0.98474)"
    assert _axes(fig, "error:bin-2").yaxis.get_major_formatter().get_useOffset() is False


def test_a_constant_gamma_says_it_is_constant():
    fig = _drawn(plots.gamma_dynamics(_history(gammas=lambda e, b: 2.0), bins=[0, 1]))
    notes = [t.get_text() for b in (0, 1) for t in _axes(fig, f"gamma:bin-{b}").texts if t.get_gid() == "note:span"]
    assert notes == ["γ constant at 2", "γ constant at 2"]


# ------------------------------------------------------------------------------------------- gaps are explained


@pytest.mark.parametrize("values, expected", [
    ([1, 2, 3], None),
    ([1, None, 3, None, None], "in epoch 2 and after epoch 3"),
    ([None, None, 3, 4], "in epochs 1–2"),
    ([1, 2, None], "in epoch 3"),
    ([None, None], "in every epoch"),
    ([1, None, None, 4, None, 6], "in epochs 2–3 and in epoch 5"),
])
def test_gap_text_names_the_epochs_without_a_value(values, expected):
    assert gap_text(np.arange(1, len(values) + 1), values) == expected


def test_gap_text_counts_updates_within_their_epoch():
    x = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])  # two γ-updates an epoch
    assert gap_text(x, [1, 1, np.nan, 1, 1, 1]) == "in epoch 2"


def test_correspondence_marks_and_explains_a_bin_that_loses_its_training_samples():
    """The digits run's bin 0: C_train stops after epoch 19 (no training sample falls into the bin) and is missing in
    epoch 17; the line's gaps were drawn without a word."""
    counts = lambda e, b: 0 if b == 0 and (e == 2 or e > 3) else 50  # noqa: E731
    fig = plots.correspondence(_history(train_counts=counts))
    ax = _axes(fig, "confidence:bin-0")
    assert ax.get_title().replace("\n", " ") == (
        "Bin 0 $C_{train}$: no training samples in the bin in epoch 2 and after epoch 3")
    (marks,) = [line for line in ax.get_lines() if line.get_gid() == "gap:c_train:bin-0"]
    assert list(marks.get_xdata()) == [2, 4, 5, 6] and marks.get_marker() == "x"
    assert GAP_LEGEND in _legend(fig)
    for b in (1, 2):  # bins without gaps: a plain title, no marks
        other = _axes(fig, f"confidence:bin-{b}")
        assert other.get_title() == f"Bin {b}"
        assert not [line for line in other.get_lines() if (line.get_gid() or "").startswith("gap:")]


def test_validation_gaps_are_explained_in_both_figures_and_a_history_without_gaps_says_nothing():
    counts = lambda e, b: 0 if b == 1 and e in (3, 4) else 20  # noqa: E731
    history = _history(val_counts=counts)
    fig = plots.correspondence(history)
    ax = _axes(fig, "confidence:bin-1")
    assert "$C_{val}$, $A_{val}$: no validation samples in the bin in epochs 3–4" in ax.get_title().replace("\n", " ")
    (marks,) = [line for line in ax.get_lines() if line.get_gid() == "gap:c_val:bin-1"]
    assert list(marks.get_xdata()) == [3, 4]

    fig = plots.gamma_dynamics(history)
    error_ax = _axes(fig, "error:bin-1")
    assert "$E_{val}$: no validation samples in the bin in epochs 3–4" in error_ax.get_title().replace("\n", " ")
    (marks,) = [line for line in error_ax.get_lines() if line.get_gid() == "gap:e_val:bin-1"]
    assert list(marks.get_xdata()) == [3, 4]
    assert GAP_LEGEND in _legend(fig)

    for draw in (plots.gamma_dynamics, plots.correspondence):
        fig = draw(_history())
        assert GAP_LEGEND not in _legend(fig)
        assert not [line for ax in fig.axes for line in ax.get_lines() if (line.get_gid() or "").startswith("gap:")]
