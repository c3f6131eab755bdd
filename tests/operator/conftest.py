"""Fixtures for the operator tests: the API emulator, a stand-in for member 0's /job endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import kmock
import pytest
import yaml

from tests.conftest import KUBECONFIG  # set in $KUBECONFIG before anything imports kubernetes
from tests.operator.emulator import Emulator
from tests.operator.fakes import FakeJobEndpoint


@pytest.fixture()
def job_endpoint() -> Iterator[FakeJobEndpoint]:
    """A local HTTP server answering GET /<namespace>/<name> as member 0's /job would."""
    with FakeJobEndpoint() as endpoint:
        yield endpoint


@pytest.fixture()
async def k8s(tmp_path, monkeypatch, job_endpoint: FakeJobEndpoint) -> AsyncIterator[Emulator]:
    """The API emulator on a local port, a kubeconfig pointing at it, the operator's env set."""
    async with Emulator() as emulator, kmock.Server(emulator) as server:
        emulator.resources.load_bundled()
        emulator.resources["jet.dev/v1alpha1/jetjobs"] = {
            "kind": "JetJob", "singular": "jetjob", "namespaced": True, "shortnames": ["jjob"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            "subresources": ["status", "scale"], "categories": ["jet"],
        }
        emulator.objects["v1/namespaces", None, "default"] = {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"},
        }
        KUBECONFIG.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
            "clusters": [{"name": "emulator", "cluster": {"server": str(server.url).rstrip("/")}}],
            "users": [{"name": "tester", "user": {"token": "test-token"}}],
            "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "tester"}}],
        }))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("JET_OPERATOR_JOB_URL_TEMPLATE", job_endpoint.url_template)
        monkeypatch.setenv("JET_OPERATOR_JOB_POLL_TIMEOUT_SECONDS", "1")
        monkeypatch.setenv("JET_OPERATOR_API_TIMEOUT_SECONDS", "20")
        yield emulator
