"""Kopf handlers: thin adapters from Kopf's calls to :mod:`jet_operator.reconcile`."""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

import kopf

from jet_operator import constants, metrics, nonces, reconcile
from jet_operator.builders import JobRef
from jet_operator.config import OperatorConfig
from jet_operator.generations import UpgradeError
from jet_operator.kube import KubeApi, load_client_configuration
from jet_operator.leader import elector_of, stop_this_process, wait_for_the_lead
from jet_operator.lifecycle import Phase
from jet_operator.spec import parse_spec

# How long Kopf waits before retrying a spec change whose savepoint failed.
UPGRADE_RETRY_DELAY_SECONDS = 30

RESOURCE = (constants.API_GROUP, constants.API_VERSION, constants.PLURAL)
# Read at import: Kopf fixes a timer's interval when the handler is registered.
TIMER_INTERVAL_SECONDS = OperatorConfig.from_env().status_interval_seconds
TIMER_CANCELLATION_POLLING_SECONDS = 1


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Load the config, name Kopf's storage under our group, tune watching and event posting."""
    config = OperatorConfig.from_env()
    settings.persistence.finalizer = constants.FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=constants.API_GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=constants.API_GROUP, key="last-handled-configuration"
    )
    settings.watching.server_timeout = config.watch_server_timeout_seconds
    settings.watching.client_timeout = config.watch_client_timeout_seconds
    settings.watching.connect_timeout = config.watch_connect_timeout_seconds
    settings.posting.level = logging.getLevelName(config.posting_level.upper())
    # A JetJob deleted while its status timer runs (in a thread) keeps its finalizer until Kopf
    # sees the timer exit; Kopf looks every 60 s by default, so a deletion could wait a minute.
    settings.background.cancellation_polling = TIMER_CANCELLATION_POLLING_SECONDS
    memo.config = config
    metrics.serve(config.metrics_port)
    memo.api = KubeApi(load_client_configuration(), config.api_timeout_seconds)


@kopf.on.startup()
async def lead(memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    """With leader election on: wait until this replica holds the Lease (Kopf watches nothing
    before every startup handler is done), then keep it; losing it stops the operator."""
    config = OperatorConfig.from_env()
    if not config.leader_election:
        return
    elector = elector_of(config)
    await wait_for_the_lead(elector, config.leader_election_waiting_health_port, logger)
    memo.elector = elector
    memo.renewal = asyncio.get_running_loop().create_task(elector.renew(on_lost=stop_this_process))


@kopf.on.cleanup()
async def resign(memo: kopf.Memo, **_: Any) -> None:
    """Stop renewing the Lease and give the lead up (a waiting replica takes over at once)."""
    renewal = getattr(memo, "renewal", None)
    if renewal is not None:
        renewal.cancel()
        elector = memo.elector
        await asyncio.to_thread(elector.release)
        elector.api.close()


@kopf.on.cleanup()
def close(memo: kopf.Memo, **_: Any) -> None:
    """Release the API client's connections."""
    api = getattr(memo, "api", None)
    if api is not None:
        api.close()


def _job(meta: kopf.Meta, generation: int | None = None) -> JobRef:
    return JobRef(
        name=meta["name"],
        namespace=meta["namespace"],
        uid=meta["uid"],
        generation=int(generation if generation is not None else meta.get("generation") or 1),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _write(update: reconcile.StatusUpdate | None, body: kopf.Body, patch: kopf.Patch) -> None:
    if update is None:
        return
    patch.status.update(update.status)
    for event in update.events:
        if event.phase:
            metrics.PHASE_TRANSITIONS.labels(phase=event.reason).inc()
        post = kopf.warn if event.warning else kopf.info
        post(body, reason=event.reason, message=event.message)


@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
def start(body: kopf.Body, meta: kopf.Meta, spec: kopf.Spec, status: kopf.Status,
          patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """A new JetJob or a changed spec: (re)build the children and (re)start the job."""
    job = _job(meta)
    try:
        parsed = parse_spec(spec)
    except ValueError as error:  # the CRD's schema refuses these; an older CRD may not
        update = reconcile.phase_update(Phase.FAILED, str(error), status, job.generation, _now())
        _write(update, body, patch)
        return
    try:
        if nonces.only_actions_changed(spec, status):
            update = nonces.apply_actions(memo.api, memo.config, job, parsed, status, _now())
        else:
            update = reconcile.start_generation(memo.api, memo.config, job, parsed, status, _now(),
                                                spec_hash=nonces.generation_hash(spec))
    except UpgradeError as error:
        kopf.warn(body, reason="UpgradeFailed", message=str(error))
        raise kopf.TemporaryError(str(error), delay=UPGRADE_RETRY_DELAY_SECONDS) from error
    _write(update, body, patch)


@kopf.on.resume(*RESOURCE)
def resume(body: kopf.Body, meta: kopf.Meta, spec: kopf.Spec, status: kopf.Status,
           patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """Operator restart: start only what was never started; running jobs are left alone."""
    if status.get("phase") and status.get("observedGeneration") == meta.get("generation"):
        return
    start(body=body, meta=meta, spec=spec, status=status, patch=patch, memo=memo)


@kopf.timer(*RESOURCE, interval=TIMER_INTERVAL_SECONDS)
def follow(body: kopf.Body, meta: kopf.Meta, spec: kopf.Spec, status: kopf.Status,
           patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """Follow the job: phase, member counts, coordinator report, restarts."""
    if not status.get("phase") or status.get("observedGeneration") != meta.get("generation"):
        return  # the create/update handler has not run for this generation yet
    job = nonces.members_job(_job(meta), status)
    try:
        parsed = parse_spec(spec)
    except ValueError:
        return  # the create/update handler has made the JetJob Failed with the reason
    _write(reconcile.follow(memo.api, memo.config, job, parsed, status, _now(),
                            observed_generation=int(meta.get("generation") or 1)), body, patch)


@kopf.on.delete(*RESOURCE)
def delete(meta: kopf.Meta, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    """Delete every child; bounded, and never blocks the JetJob's deletion."""
    left = reconcile.cleanup(memo.api, memo.config, _job(meta))
    if left:
        logger.warning("Left for Kubernetes' garbage collector: %s", "; ".join(left))
