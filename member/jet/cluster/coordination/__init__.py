"""Member 0's job coordination (Jet's master; imports ``executions``, ``edges`` and ``links``).

The coordinator of every job (:mod:`.coordinator`), one object per running execution that drives
it over the members (:mod:`.execution_driver`), a client's requests (:mod:`.job_control`),
scaling up after members join (:mod:`.scale_up`), what follows an execution's end
(:mod:`.job_restarts`), the snapshots of a running execution (:mod:`.snapshot_coordinator`), a
job's states and records (:mod:`.job_state`, :mod:`.job_history`) and their copy in the
snapshot store (:mod:`.job_store`).
"""
