"""Fixtures for the metric tests: the shared reference-comparison harness (metric_tester.py)."""

import pytest

from metric_tester import MetricTester


@pytest.fixture(scope="session")
def metric_tester() -> MetricTester:
    """Runs a metric against a reference over every variant of a case (see metric_tester.py)."""
    return MetricTester()
