"""The report page as a reader sees it: rendered by headless Chromium (Debian's `chromium`, installed by .ci/run),
the screenshot is no blank page and every section heading is in the DOM the browser built. Skips, saying why, where
no browser is installed."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from report_pages import PAGE_HEADINGS, predictions_file

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no headless browser: install Debian's chromium (apt-get install -y chromium; .ci/run does) to "
                f"render the report page (looked for {', '.join(BROWSERS)})")


def _chromium(browser: str, *args: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_chromium_renders_the_page_with_every_heading_and_no_blank_screenshot(tmp_path):
    from matplotlib import image

    from adacal.commands.report import run_report

    browser = _browser()
    preds = predictions_file(tmp_path / "scores.npz", n=120)
    run = run_report([preds], quick=True, bootstrap=0, method="temperature", out=tmp_path / "report.html")
    url = run.page.resolve().as_uri()
    shot = tmp_path / "shot.png"
    done = _chromium(browser, "--window-size=1200,2400", f"--screenshot={shot}", url, tmp_path=tmp_path)
    assert shot.is_file(), done.stderr[-2000:]
    pixels = image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2400, 1200)
    colours = np.unique((pixels.reshape(-1, 3) * 255).round().astype(np.uint8), axis=0)
    assert len(colours) > 50  # text, tables and figures: far from one colour
    assert pixels.std() > 0.05
    dom = _chromium(browser, "--dump-dom", url, tmp_path=tmp_path).stdout
    for title in PAGE_HEADINGS:
        assert f"<h2>{title}</h2>" in dom
    assert dom.count('src="data:image/png;base64,') == 3  # reliability, before/after, risk–coverage


def test_the_committed_example_is_small_and_self_contained():
    """docs/report-example.html (a digits AdaFocal run): under 1 MB with its screenshot and JSON, every figure an
    embedded PNG with alt text, every section there."""
    from pathlib import Path

    from report_pages import PNG_SIGNATURE, image_bytes, read_page

    docs = Path(__file__).resolve().parents[1] / "docs"
    files = [docs / "report-example.html", docs / "report-example.png", docs / "report-example.json"]
    assert sum(path.stat().st_size for path in files) < 1_000_000
    assert files[1].read_bytes().startswith(PNG_SIGNATURE)
    page = read_page(files[0])
    assert not page.errors and page.headings["h2"] == list(PAGE_HEADINGS)
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == 5 and all(attrs["alt"] and image_bytes(attrs["src"]).startswith(PNG_SIGNATURE)
                                     for attrs in images)
