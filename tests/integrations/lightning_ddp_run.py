"""Spawned by test_lightning_ddp.py: trains `Classifier` two epochs with `strategy="ddp"` on 2 CPU processes (gloo)
and writes, per rank, what the callback left: OUT/rank<r>.json (the loss's history, its γ, the logged metrics) and,
from rank 0, OUT/net.pt (the weights the last validation epoch ran with).

    python tests/integrations/lightning_ddp_run.py OUT
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # lightning_modules, beside this script

from lightning_modules import Classifier, loaders, mlp, quiet_lightning, trainer  # noqa: E402

from adacal.integrations.lightning import CalibrationLossCallback  # noqa: E402


def main(out: Path) -> None:
    quiet_lightning()
    torch.set_num_threads(1)
    train_loader, val_loader = loaders()  # 45 validation samples: ranks of 23 and 22 (one repeated by the sampler)
    module = Classifier(mlp())
    fit = trainer(max_epochs=2, callbacks=[CalibrationLossCallback(metrics=["ece-em", "nll"])], strategy="ddp",
                  devices=2)
    fit.fit(module, train_loader, val_loader)
    rank = fit.global_rank
    if rank == 0:
        torch.save(module.net.state_dict(), out / "net.pt")
    record = {
        "history": [dict(update.to_dict()) for update in module.loss.history],
        "gammas": module.loss.gammas.tolist(),
        "metrics": {key: float(value) for key, value in fit.callback_metrics.items()},
        "world_size": fit.world_size,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
