"""The Kopf operator that runs JetJob resources (jetjobs.jet.dev) on Kubernetes.

Handlers live in :mod:`jet_operator.handlers` (registered by importing :mod:`jet_operator.main`);
every Kubernetes object is built by the pure functions in :mod:`jet_operator.builders` and
:mod:`jet_operator.spark`, and the job's lifecycle is decided by :mod:`jet_operator.lifecycle`.
"""
