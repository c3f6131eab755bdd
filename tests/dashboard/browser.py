"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by Selenium."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tests.system_packages import require_program

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: Without the background-networking flags Chromium's own connections fail on a machine without
#: the internet, and take the page's with them.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1050")


def missing() -> str | None:
    """Why no browser test can run here, or None (fails the test under CI: .ci/run installs them)."""
    require_program(str(CHROMIUM), "chromium")
    require_program(str(CHROMEDRIVER), "chromium-driver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium; it is in the test extras)"
    return None


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium with a fresh profile, quit and removed after."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="jet-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
