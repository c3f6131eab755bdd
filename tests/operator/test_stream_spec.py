"""A streaming JetJob's spec: how often its members log their progress."""

from __future__ import annotations

import pytest
import yaml

from jet.cluster.settings import MemberSettings
from jet_operator.builders import render_member_yaml
from jet_operator.lifecycle import JobReport, Phase, assess
from jet_operator.spec import parse_spec
from tests.operator.crdschema import validator

PIPELINE = {"code": "def pipeline(): ..."}


def member_settings(spec: dict, tmp_path) -> MemberSettings:
    """The settings a member reads from the member.yaml the operator renders for ``spec``."""
    path = tmp_path / "member.yaml"
    path.write_text(render_member_yaml(parse_spec(spec)))
    return MemberSettings.load(config_file=path, environ={})


def test_the_progress_interval_reaches_the_members_settings_in_ms(tmp_path):
    settings = member_settings({"pipeline": PIPELINE, "progressLogIntervalSeconds": 3}, tmp_path)
    assert settings.progress_log_interval_ms == 3000


def test_zero_turns_the_progress_lines_off_and_absent_leaves_the_members_default(tmp_path):
    assert member_settings({"pipeline": PIPELINE, "progressLogIntervalSeconds": 0}, tmp_path).progress_log_interval_ms == 0
    rendered = yaml.safe_load(render_member_yaml(parse_spec({"pipeline": PIPELINE})))
    assert "progress_log_interval_ms" not in rendered
    assert member_settings({"pipeline": PIPELINE}, tmp_path).progress_log_interval_ms == 10_000


@pytest.mark.parametrize("value", [-1, 1.5, "10", True])
def test_a_bad_interval_is_refused_naming_the_field(value):
    with pytest.raises(ValueError, match=r"spec\.progressLogIntervalSeconds must be an integer >= 0"):
        parse_spec({"pipeline": PIPELINE, "progressLogIntervalSeconds": value})
    document = {"apiVersion": "jet.dev/v1alpha1", "kind": "JetJob", "metadata": {"name": "s"},
                "spec": {"pipeline": PIPELINE, "progressLogIntervalSeconds": value}}
    assert list(validator().iter_errors(document)), "the CRD refuses it too"


def test_a_running_stream_is_running_however_long_it_runs():
    from datetime import datetime, timedelta, timezone

    from jet_operator.lifecycle import PodView

    started = datetime(2026, 1, 1, tzinfo=timezone.utc)
    pods = [PodView(f"s-member-{i}", "Running", scheduled=True, ready=True, created=started) for i in range(2)]
    report = JobReport("job-1", "RUNNING", start_time="2026-01-01T00:00:05Z")
    for later in (timedelta(minutes=1), timedelta(days=30)):
        assessment = assess(desired=2, member_pods=pods, spark_pods=[], job=report, now=started + later,
                            scheduling_timeout_seconds=300)
        assert assessment.phase is Phase.RUNNING and assessment.message == "job job-1 is RUNNING"
