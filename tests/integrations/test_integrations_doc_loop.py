"""docs/integrations.md §1: the plain-loop example runs as written; its `update_from` is `update` on the model's
validation logits (the pass adds nothing of its own), and three updates moved γ."""

from __future__ import annotations

import copy

import numpy as np
import torch

from doc_blocks import run_section


def test_plain_loop_example_runs_and_update_from_is_update_on_validation_logits():
    namespace = run_section("A plain PyTorch loop")
    loss_fn, model, val_loader = namespace["loss_fn"], namespace["model"], namespace["val_loader"]
    record = namespace["record"]
    assert len(record["gammas"]) == 15 and np.isfinite(record["gammas"]).all()
    assert not np.allclose(record["gammas"], 1.0)
    assert sum(record["counts"]) == len(val_loader.dataset)
    assert model.training  # the pass put the model back in train mode

    through_helper, by_hand = copy.deepcopy(loss_fn), copy.deepcopy(loss_fn)
    helper_record = through_helper.update_from(model, val_loader)
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(inputs) for inputs, _ in val_loader])
    model.train()
    hand_record = by_hand.update(logits, torch.cat([labels for _, labels in val_loader]))
    for key in ("edges", "gammas", "val_confidence", "val_accuracy", "counts"):
        np.testing.assert_allclose(helper_record[key], hand_record[key], rtol=0, atol=1e-12, err_msg=key)
