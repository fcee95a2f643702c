"""The typed update records: exact round trip to history.jsonl's mapping, and the cross-rank merge of C_train."""

import json

import numpy as np
import pytest
import torch

from adacal.losses import AdaFocalLoss, CalFocalLoss
from adacal.losses.records import BinnedLossEpoch, BinUpdate, TrainBinStatistics

RECORD = {
    "edges": [0.0, 0.4, 1.0],
    "gammas": [1.5, -0.5],
    "val_confidence": [0.3, 0.8],
    "val_accuracy": [0.25, None],
    "counts": [4, 0],
}


def test_update_round_trips_the_history_mapping_exactly():
    record = BinUpdate.from_dict(RECORD)
    assert record.to_dict() == RECORD
    assert json.dumps(record.to_dict()) == json.dumps(RECORD)  # same keys, same order, same values
    assert list(record) == list(RECORD) and record["counts"] == [4, 0] and record.gammas == (1.5, -0.5)
    with pytest.raises(AttributeError):
        record.gammas = None  # frozen


def test_update_without_gammas_and_missing_key():
    assert BinUpdate.from_dict({**RECORD, "gammas": None}).to_dict()["gammas"] is None
    with pytest.raises(KeyError, match="edges"):
        BinUpdate.from_dict({k: v for k, v in RECORD.items() if k != "edges"})


def test_merge_adds_counts_and_weights_means_by_them():
    # rank 0: bin 0 holds 3 samples of mean 0.2; rank 1: bin 0 holds 1 of 0.6, bin 1 holds 2 of 0.9; bin 2 empty
    parts = [
        TrainBinStatistics(train_confidence=(0.2, 0.0, 0.0), train_counts=(3, 0, 0)),
        {"train_confidence": [0.6, 0.9, 0.0], "train_counts": [1, 2, 0]},
    ]
    merged = TrainBinStatistics.merge(parts)
    np.testing.assert_allclose(merged.train_confidence, [(3 * 0.2 + 0.6) / 4, 0.9, 0.0])
    assert merged.train_counts == (4, 2, 0)
    single = TrainBinStatistics.merge([parts[0]])
    np.testing.assert_allclose(single.train_confidence, parts[0].train_confidence, rtol=1e-15)
    assert single.train_counts == parts[0].train_counts


def test_epoch_section_matches_history_layout():
    train = TrainBinStatistics(train_confidence=(0.1, 0.7), train_counts=(5, 6))
    section = BinnedLossEpoch(updates=(BinUpdate.from_dict(RECORD),), train=train).to_dict()
    assert section == {"updates": [RECORD], "train_confidence": [0.1, 0.7], "train_counts": [5, 6]}
    assert BinnedLossEpoch.from_dict(section).to_dict() == section
    assert BinnedLossEpoch(updates=()).to_dict() == {"updates": []}


@pytest.mark.parametrize("loss", [AdaFocalLoss(n_bins=3), CalFocalLoss(n_bins=3)])
def test_losses_return_typed_records_that_survive_a_state_dict(loss):
    torch.manual_seed(0)
    logits, labels = torch.randn(30, 4), torch.randint(0, 4, (30,))
    record = loss.update(logits, labels)
    assert isinstance(record, BinUpdate) and loss.history == [record]
    assert sum(record.counts) == 30 and len(record.edges) == 4
    state = loss.state_dict()
    fresh = type(loss)(n_bins=3)
    fresh.load_state_dict(state)
    assert [r.to_dict() for r in fresh.history] == [record.to_dict()]
