"""`strategy="ddp"` on 2 CPU processes (gloo): both ranks end with the same γ, and that γ is what one process
computes over the whole validation set (the sample Lightning's DistributedSampler repeats left out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("lightning.pytorch", reason="the callbacks need lightning: pip install adacal[lightning]")
pytest.importorskip("torch.distributed", reason="DDP needs torch.distributed")

from lightning_modules import loaders, mlp  # noqa: E402

from adacal.losses import AdaFocalLoss  # noqa: E402

SCRIPT = Path(__file__).with_name("lightning_ddp_run.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ddp_ranks_apply_the_gamma_of_the_whole_validation_set(tmp_path):
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    assert ranks[0]["history"] == ranks[1]["history"] and ranks[0]["gammas"] == ranks[1]["gammas"]
    history = ranks[0]["history"]
    assert len(history) == 2 and all(sum(update["counts"]) == 45 for update in history)  # every sample, once

    # One process over the whole validation set, with the weights of the last validation epoch and the γ before it.
    _, val_loader = loaders()
    net = mlp()
    net.load_state_dict(torch.load(tmp_path / "net.pt"))
    net.eval()
    with torch.no_grad():
        logits = torch.cat([net(inputs) for inputs, _ in val_loader])
    labels = torch.cat([labels for _, labels in val_loader])
    single = AdaFocalLoss(n_bins=5)
    single.gammas.copy_(torch.tensor(history[0]["gammas"], dtype=torch.float64))
    record = single.update(logits, labels)
    np.testing.assert_allclose(history[1]["gammas"], record["gammas"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(history[1]["edges"], record["edges"], rtol=0, atol=1e-12)
    assert history[1]["counts"] == list(record["counts"])
    for rank in ranks:  # the metrics logged on each rank are the whole set's
        nll = torch.nn.functional.cross_entropy(logits, labels).item()
        assert rank["metrics"]["val/nll"] == pytest.approx(nll, abs=1e-6)
        assert rank["metrics"]["adafocal/updates"] == 2.0
