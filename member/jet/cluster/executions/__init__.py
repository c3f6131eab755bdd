"""A member's part of each job (Jet's ``JobExecutionService``; imports ``edges`` and ``links``).

One execution on one member from init to cleanup and its end report (:mod:`.job_execution`),
the outcome it reports and the typed kind of a failure (:mod:`.outcome`), the threads that build
the reports (:mod:`.report_threads`), the running executions' metrics (:mod:`.vertex_collector`)
and observable results across the cluster (:mod:`.observables`).
"""
