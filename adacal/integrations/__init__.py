"""adacal inside other training stacks. Each module imports its framework only when it is itself imported, so
`import adacal` (and `import adacal.integrations`) never imports Lightning or transformers:

- `adacal.integrations.lightning`: a Lightning callback that updates a validation-driven loss's γ after each
  validation epoch (never in the sanity check), logs its state and the calibration metrics, and keeps the loss state
  in Lightning checkpoints (`pip install "adacal[lightning]"`);
- `adacal.integrations.huggingface`: a `transformers.Trainer` that trains with any adacal loss and updates γ after
  each evaluation, and a `compute_metrics` with the calibration metrics (`pip install "adacal[huggingface]"`).
"""
