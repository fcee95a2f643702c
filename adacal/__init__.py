"""adacal: calibration-aware training (AdaFocal), calibration metrics, post-hoc calibrators and OOD checks."""

__version__ = "0.1.0"
