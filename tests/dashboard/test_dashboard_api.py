"""The dashboard's API and pages over real HTTP on a local cluster: who may see them, what a
job's page is made of, and which actions are refused."""

import pytest
from jet.cluster.client import as_dag
from jet.cluster.coordination.job_state import JobStatus
from jet.execution import JobFailedError

from tests.cluster.cluster_support import wait_until
from tests.dashboard.support import USER_ERROR, failing_pipeline, request, stream_dag


def test_pages_and_api_need_the_token_but_health_and_metrics_do_not(cluster):
    port = cluster.http_ports[0]
    for path in ("/", "/ui/app.js", "/api/cluster", "/api/jobs"):
        assert request(port, "GET", path).status == 401, path
        assert request(port, "GET", path, token="not-the-token").status == 401, path
        assert request(port, "GET", path, token=cluster.token).status == 200, path
    assert b"Cluster token" in request(port, "GET", "/").body  # the login form
    assert request(port, "POST", "/api/jobs/x/cancel", body={}).status == 401
    assert request(port, "GET", "/healthz").status == 200
    assert request(port, "GET", "/metrics").status == 200


def test_a_browser_signs_in_with_the_token_and_gets_a_session_cookie(cluster):
    port = cluster.http_ports[0]
    refused = request(port, "GET", "/login?token=wrong")
    assert refused.status == 401 and b"not this cluster" in refused.body
    assert refused.headers.get("Set-Cookie") is None
    signed_in = request(port, "GET", f"/login?token={cluster.token}")
    assert signed_in.status == 303 and signed_in.headers["Location"] == "/"
    cookie = signed_in.headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in signed_in.headers["Set-Cookie"] and cluster.token not in cookie
    page = request(port, "GET", "/", cookie=cookie)
    assert page.status == 200 and b"/ui/app.js" in page.body
    assert request(port, "GET", "/api/jobs", cookie=cookie).status == 200
    # the other member takes the same session: it is derived from the cluster token
    assert request(cluster.http_ports[1], "GET", "/api/cluster", cookie=cookie).status == 200
    assert request(port, "GET", "/api/jobs", cookie="jet_session=forged").status == 401


def test_a_post_with_the_cookie_must_come_from_the_dashboard_itself(cluster, stream_job):
    port, job = cluster.http_ports[0], stream_job[0]
    cookie = request(port, "GET", f"/login?token={cluster.token}").headers["Set-Cookie"].split(";")[0]
    path = f"/api/jobs/{job.id}/resume"
    no_header = request(port, "POST", path, cookie=cookie, body={})
    assert no_header.status == 403 and "X-Jet-Dashboard" in no_header.json()["error"]
    other_site = request(port, "POST", path, cookie=cookie, body={},
                         headers={"X-Jet-Dashboard": "1", "Origin": "https://evil.example"})
    assert other_site.status == 403 and "evil.example" in other_site.json()["error"]
    own_page = request(port, "POST", path, cookie=cookie, body={},
                       headers={"X-Jet-Dashboard": "1", "Origin": f"http://127.0.0.1:{port}"})
    assert own_page.status == 409  # it got through to the job, which is RUNNING
    assert job.status is JobStatus.RUNNING


def test_the_job_page_shows_the_dag_the_test_built(cluster, stream_job):
    job, dag = stream_job
    answer = request(cluster.http_ports[0], "GET", f"/api/jobs/{job.id}", token=cluster.token)
    assert answer.status == 200
    shown = answer.json()
    assert shown["jobId"] == job.id and shown["name"] == "dashboard-stream" and shown["status"] == "RUNNING"
    vertices = {v["name"]: v for v in shown["dag"]["vertices"]}
    assert set(vertices) == {v.name for v in dag.vertices}
    edges = {(e["source"], e["sourceOrdinal"], e["dest"], e["destOrdinal"], e["distributed"])
             for e in shown["dag"]["edges"]}
    assert edges == {(e.source.name, e.source_ordinal, e.dest.name, e.dest_ordinal, e.is_distributed())
                     for e in dag.edges}
    assert any(e["kind"].startswith("distributed-partitioned") for e in shown["dag"]["edges"])
    for edge in shown["dag"]["edges"]:  # drawn left to right
        assert vertices[edge["source"]]["depth"] < vertices[edge["dest"]]["depth"]
    sources = {e.source.name for e in dag.edges} - {e.dest.name for e in dag.edges}
    assert {name for name, v in vertices.items() if v["depth"] == 0} == sources
    assert all(v["totalParallelism"] == 2 * v["localParallelism"] for v in vertices.values())
    wait_until(lambda: request(cluster.http_ports[0], "GET", f"/api/jobs/{job.id}", token=cluster.token)
               .json()["snapshots"]["count"] >= 1, timeout_s=30, what="a snapshot on the job's page")


def test_refused_actions_answer_409_with_the_reason(cluster, stream_job):
    port, token, job = cluster.http_ports[0], cluster.token, stream_job[0]
    resume = request(port, "POST", f"/api/jobs/{job.id}/resume", token=token, body={})
    assert resume.status == 409 and "only a SUSPENDED job can be resumed" in resume.json()["error"]
    batch = cluster.new_job(failing_pipeline(), {"name": "dashboard-failing"})
    with pytest.raises(JobFailedError):
        batch.join(60)
    suspend = request(port, "POST", f"/api/jobs/{batch.id}/suspend", token=token, body={})
    assert suspend.status == 409 and "it is FAILED" in suspend.json()["error"]
    export = request(port, "POST", f"/api/jobs/{batch.id}/export-snapshot", token=token, body={"name": "x"})
    assert export.status == 409 and "NONE" in export.json()["error"]
    bad_name = request(port, "POST", f"/api/jobs/{job.id}/export-snapshot", token=token, body={"name": ""})
    assert bad_name.status == 400 and "snapshot name" in bad_name.json()["error"]
    assert request(port, "POST", "/api/jobs/0000-0000-0000-0000/cancel", token=token, body={}).status == 404
    unknown = request(port, "POST", f"/api/jobs/{job.id}/explode", token=token, body={})
    assert unknown.status == 404 and "suspend" in unknown.json()["error"]
    assert job.status is JobStatus.RUNNING


def test_a_failed_jobs_page_has_the_users_error_with_their_frames_first(cluster):
    job = cluster.new_job(failing_pipeline(), {"name": "dashboard-error"})
    with pytest.raises(JobFailedError):
        job.join(60)
    shown = request(cluster.http_ports[0], "GET", f"/api/jobs/{job.id}", token=cluster.token).json()
    assert shown["status"] == "FAILED"
    error = shown["error"]
    assert USER_ERROR in error and "in refuse_seven" in error
    assert error.index("refuse_seven") < error.index(USER_ERROR)
    assert "Called by the Jet engine" not in error  # as `jet run` prints it
    # The job has ended: its page still draws the DAG it ran
    assert {v["name"] for v in shown["dag"]["vertices"]} == {v.name for v in as_dag(failing_pipeline()).vertices}


def test_a_cancelled_jobs_page_says_it_was_cancelled_not_that_it_failed_in_the_client(cluster):
    job = cluster.new_job(stream_dag(), {"name": "dashboard-cancelled"})
    wait_until(lambda: job.status is JobStatus.RUNNING, timeout_s=30, what="RUNNING")
    job.cancel()
    wait_until(lambda: job.status is JobStatus.FAILED, timeout_s=30, what="cancelled")
    shown = request(cluster.http_ports[0], "GET", f"/api/jobs/{job.id}", token=cluster.token).json()
    assert shown["error"] == "cancelled: the job was cancelled by the client", shown["error"]


def test_the_cluster_shows_every_member_and_only_member_0_has_the_jobs(cluster, stream_job):
    shown = request(cluster.http_ports[0], "GET", "/api/cluster", token=cluster.token).json()
    assert [m["index"] for m in shown["members"]] == [0, 1]
    assert [m["address"] for m in shown["members"]] == cluster.addresses
    for member in shown["members"]:
        assert member["state"] == "UP"
        assert member["load"]["rssBytes"] > 10_000_000 and member["load"]["cpuSeconds"] > 0
        assert member["load"]["executions"] >= 1  # the stream job runs on both
    assert stream_job[0].id in [j["jobId"] for j in shown["jobs"]]
    other = request(cluster.http_ports[1], "GET", "/api/jobs", token=cluster.token)
    assert other.status == 404 and "member 0" in other.json()["error"]
    assert request(cluster.http_ports[1], "GET", "/api/cluster", token=cluster.token).json()["jobs"] is None


def test_the_read_only_job_status_credential_reads_but_cannot_act(cluster, stream_job):
    from jet.cluster.links.auth import job_status_credential
    port, credential = cluster.http_ports[0], job_status_credential(cluster.token)
    assert request(port, "GET", "/api/jobs", token=credential).status == 200
    refused = request(port, "POST", f"/api/jobs/{stream_job[0].id}/suspend", token=credential, body={})
    assert refused.status == 403 and stream_job[0].status is JobStatus.RUNNING


def test_a_members_debug_log_does_not_carry_the_token_of_a_sign_in(tmp_path):
    import jet
    with jet.local_cluster(members=1, log_dir=tmp_path, log_level="DEBUG") as single:
        assert request(single.http_ports[0], "GET", f"/login?token={single.token}").status == 303
        assert request(single.http_ports[0], "GET", f"/login?token=wrong-{single.token}").status == 401
        log_path = single.log_paths[0]
    text = log_path.read_text()
    assert "GET /login?token=<token>" in text  # the request was logged, without its token
    assert single.token not in text


def test_a_post_without_a_usable_length_is_refused(cluster):
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", cluster.http_ports[0], timeout=30)
    try:
        connection.putrequest("POST", "/api/jobs/x/cancel")
        connection.putheader("Authorization", f"Bearer {cluster.token}")
        connection.putheader("Content-Length", "lots")
        connection.endheaders()
        answer = connection.getresponse()
        assert answer.status == 400 and b"Content-Length" in answer.read()
    finally:
        connection.close()
