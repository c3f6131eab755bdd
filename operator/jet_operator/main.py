"""The operator's entry module: ``kopf run --standalone -A -m jet_operator.main``."""

from jet_operator import handlers  # noqa: F401  (importing registers the handlers)
