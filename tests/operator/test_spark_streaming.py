"""The Spark drivers of a streaming JetJob: long-lived driver pods that are not expected to
complete while the job runs, and whose failure fails the JetJob with the end of their log.

The drivers of a stream are the same ``jet spark-source``/``jet spark-sink`` commands as a
batch job's: each finds the pipeline's stream stages itself and runs their Structured
Streaming queries until the stream or the job ends."""

from __future__ import annotations

import datetime

from jet_operator import constants
from jet_operator.lifecycle import JobReport, Phase, PodView, assess, format_time
from jet_operator.spark import build_spark_driver_pod

from tests.operator.test_builders import JOB, JOB_ID, SPARK, _container, _parse_driver_args

NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)
STREAM_FILE = "/etc/jet/pipeline/main.py"


def _pod(name: str, phase: str, *, age_hours: float = 0, exit_code: int | None = None, log_tail: str = "",
         ready: bool = True) -> PodView:
    status: dict = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"},
                                                   {"type": "Ready", "status": "True" if ready else "False"}]}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": "driver", "state": {
            "terminated": {"exitCode": exit_code, "message": log_tail}}}]
    created = format_time(NOW - datetime.timedelta(hours=age_hours))
    return PodView.of({"metadata": {"name": name, "creationTimestamp": created}, "status": status})


MEMBERS = [_pod("wc-member-0", "Running", age_hours=30), _pod("wc-member-1", "Running", age_hours=30)]


def _assess(status: str, drivers: list[PodView]):
    report = JobReport.of({"jobId": JOB_ID, "status": status})
    return assess(desired=2, member_pods=MEMBERS, spark_pods=drivers, job=report, now=NOW,
                  scheduling_timeout_seconds=60)


def test_a_streaming_driver_pod_can_live_as_long_as_its_job() -> None:
    for component in constants.SPARK_COMPONENTS:
        pod = build_spark_driver_pod(JOB, SPARK, component, "wc-spark", JOB_ID)
        spec = pod["spec"]
        assert "activeDeadlineSeconds" not in spec  # nothing ends a long-lived driver but its queries
        assert spec["restartPolicy"] == "Never"  # a failed driver fails the JetJob, it is not restarted unseen
        container = _container(spec, constants.SPARK_DRIVER_CONTAINER)
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
        assert "livenessProbe" not in container  # a micro-batch may take long: no probe kills it
        # queries without a checkpoint_location checkpoint to a temporary directory: /tmp is writable
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        tmp = [m for m in container["volumeMounts"] if m["mountPath"] == constants.TMP_DIR]
        assert tmp and any(v["name"] == tmp[0]["name"] and "emptyDir" in v for v in spec["volumes"])
        # the same command runs stream stages: it must parse, with the running job's id
        context = _parse_driver_args(container["args"])
        assert context.command.name == component and context.params["job_id"] == JOB_ID
        assert context.params["pipeline_file"] == STREAM_FILE


def test_running_streaming_drivers_keep_a_running_job_running_however_long() -> None:
    drivers = [_pod("wc-spark-source", "Running", age_hours=24), _pod("wc-spark-sink", "Running", age_hours=24)]
    assert _assess("RUNNING", drivers).phase == Phase.RUNNING


def test_a_stream_source_driver_that_ended_leaves_the_job_running() -> None:
    # available_now: the Spark source read what there was and ended; the job flushes its windows
    drivers = [_pod("wc-spark-source", "Succeeded", exit_code=0, ready=False), _pod("wc-spark-sink", "Running")]
    assert _assess("RUNNING", drivers).phase == Phase.RUNNING


def test_a_failing_streaming_driver_fails_the_job_with_the_end_of_its_log() -> None:
    log_tail = "\n".join([*(f"INFO Spark stream of 'in': micro-batch {i}" for i in range(30)),
                          "spark-source failed: [STREAM_FAILED] Query terminated with exception: boom", ""])
    drivers = [_pod("wc-spark-source", "Failed", age_hours=5, exit_code=1, log_tail=log_tail),
               _pod("wc-spark-sink", "Running", age_hours=5)]
    result = _assess("RUNNING", drivers)
    assert result.phase == Phase.FAILED
    assert result.message.startswith("pod wc-spark-source failed (exit code 1): ")
    assert result.message.endswith("spark-source failed: [STREAM_FAILED] Query terminated with exception: boom")


def test_a_stream_that_ended_completes_once_the_sink_driver_has_committed_and_stopped() -> None:
    writing = _assess("COMPLETED", [_pod("wc-spark-source", "Succeeded", exit_code=0),
                                    _pod("wc-spark-sink", "Running")])
    assert writing.phase == Phase.COMPLETING
    done = _assess("COMPLETED", [_pod("wc-spark-source", "Succeeded", exit_code=0),
                                 _pod("wc-spark-sink", "Succeeded", exit_code=0)])
    assert done.phase == Phase.COMPLETED
