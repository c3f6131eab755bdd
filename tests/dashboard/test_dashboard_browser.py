"""The dashboard in a real browser (headless Chromium): a running streaming job's DAG with live
rates, suspend, resume and export a snapshot with the buttons, a failed job's error;
screenshots for the docs."""

import os
from pathlib import Path

import pytest
from jet.cluster.coordination.job_state import JobStatus
from jet.execution import JobFailedError

from tests.dashboard.browser import chromium, missing
from tests.dashboard.support import USER_ERROR, failing_pipeline


@pytest.fixture(autouse=True)
def browser_installed():
    """Skips naming what is missing (fails under CI, where .ci/run installs it)."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
DOCS_SCREENSHOTS_ENV = "JET_DOCS_SCREENSHOTS"
"""Set to 1 to save the screenshots into docs/images (otherwise they go to the test's tmp dir)."""
WAIT_S = 30


def save_screenshot(driver, name: str, tmp_path: Path) -> None:
    """A PNG of the page, in docs/images when ``$JET_DOCS_SCREENSHOTS`` is 1."""
    directory = DOCS_IMAGES if os.environ.get(DOCS_SCREENSHOTS_ENV) == "1" else tmp_path
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"


@pytest.fixture(scope="module")
def browser(cluster):
    with chromium() as driver:
        driver.get(f"http://127.0.0.1:{cluster.http_ports[0]}/login?token={cluster.token}")
        yield driver


def wait(driver, condition, what):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(lambda d: condition(d), message=what)


def css(driver, selector):
    from selenium.webdriver.common.by import By
    return driver.find_elements(By.CSS_SELECTOR, selector)


def vertex_figure(driver, name, attribute):
    found = css(driver, f'#dag [data-vertex="{name}"]')
    return float(found[0].get_attribute(attribute)) if found else 0.0


def status_shown(driver):
    found = css(driver, '[data-testid="job-status"]')
    return found[0].text if found else ""


def test_the_cluster_page_lists_the_members_and_the_running_job(cluster, stream_job, browser, tmp_path):
    job = stream_job[0]
    browser.get(f"http://127.0.0.1:{cluster.http_ports[0]}/#/")
    rows = wait(browser, lambda d: len(css(d, '[data-testid="member-row"]')) == 2 and css(d, f'[data-job="{job.id}"]')
                and css(d, '[data-testid="member-row"]'), "both members and the job")
    assert [row.get_attribute("data-member") for row in rows] == ["0", "1"]
    wait(browser, lambda d: "%" in css(d, '[data-testid="member-row"]')[1].text, "a CPU share from two looks")
    save_screenshot(browser, "dashboard-cluster.png", tmp_path)


def test_the_job_page_shows_every_vertex_with_live_rates_and_its_buttons_steer_the_job(cluster, stream_job, browser,
                                                                                     tmp_path):
    job, dag = stream_job
    css(browser, f'[data-job="{job.id}"] a')[0].click()
    drawn = wait(browser, lambda d: len(css(d, "#dag [data-vertex]")) == len(dag.vertices)
                 and css(d, "#dag [data-vertex]"), "every vertex drawn")
    assert {v.get_attribute("data-vertex") for v in drawn} == {v.name for v in dag.vertices}
    source = next(v.name for v in dag.vertices if not dag.inbound_edges(v.name))
    first = vertex_figure(browser, source, "data-out")
    wait(browser, lambda d: vertex_figure(d, source, "data-out") > first, "the source's count to grow")
    wait(browser, lambda d: vertex_figure(d, source, "data-rate") > 0, "the source's rate above 0")
    wait(browser, lambda d: css(d, '[data-testid="snapshot-count"]')
         and css(d, '[data-testid="snapshot-count"]')[0].text not in ("", "0"), "a snapshot shown")
    save_screenshot(browser, "dashboard-job.png", tmp_path)

    css(browser, '[data-testid="action-suspend"]')[0].click()
    wait(browser, lambda d: status_shown(d) == "SUSPENDED", "SUSPENDED on the page")
    assert job.status is JobStatus.SUSPENDED
    resume = wait(browser, lambda d: css(d, '[data-testid="action-resume"]:not([disabled])'), "resume enabled")
    resume[0].click()
    wait(browser, lambda d: status_shown(d) == "RUNNING", "RUNNING on the page")
    assert job.status is JobStatus.RUNNING

    css(browser, '[data-testid="action-export-snapshot"]')[0].click()
    from selenium.webdriver.support import expected_conditions
    prompt = wait(browser, expected_conditions.alert_is_present(), "the prompt for the export's name")
    prompt.send_keys("from-the-dashboard")
    prompt.accept()
    wait(browser, lambda d: "export-snapshot: requested" in css(d, '[data-testid="action-message"]')[0].text,
         "the export done")
    assert "from-the-dashboard" in [snapshot["name"] for snapshot in cluster.client.snapshots()]


def test_a_failed_jobs_page_shows_the_users_exception(cluster, browser):
    job = cluster.new_job(failing_pipeline(), {"name": "dashboard-browser-error"})
    with pytest.raises(JobFailedError):
        job.join(60)
    browser.get(f"http://127.0.0.1:{cluster.http_ports[0]}/#/jobs/{job.id}")
    shown = wait(browser, lambda d: css(d, '[data-testid="job-error"]'), "the job's error")[0].text
    assert USER_ERROR in shown and "refuse_seven" in shown
    assert status_shown(browser) == "FAILED"


def test_backpressure_colours_the_vertex_a_slow_sink_holds_back(cluster, browser):
    """numbers -> relay -> a sink sleeping per chunk (and numbers -> a free sink): the relay is
    shown held back most of the time, while the slow sink itself, where the job is bound, is not
    held back; their colours differ."""
    from tests.metrics.jobs import back_pressure_dag

    job = cluster.new_job(back_pressure_dag(5_000_000), {"name": "dashboard-backpressure"})
    try:
        browser.get(f"http://127.0.0.1:{cluster.http_ports[0]}/#/jobs/{job.id}")
        wait(browser, lambda d: vertex_figure(d, "relay", "data-backpressure") > 0.5, "the relay held back")
        assert vertex_figure(browser, "slow_sink", "data-backpressure") == 0.0
        relay, bound = (css(browser, f'#dag [data-vertex="{name}"] rect')[0].get_attribute("fill")
                        for name in ("relay", "slow_sink"))
        assert relay != bound
    finally:
        job.cancel()
