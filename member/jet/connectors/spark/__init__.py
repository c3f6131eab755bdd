"""Spark as the data access layer of a Jet job (see docs/spark.md).

- :mod:`.stages`: ``Sources.spark``, ``Sources.spark_query``, ``Sinks.spark`` descriptors;
- :mod:`.processors`: the Spark source and sink processors that run in the job;
- :mod:`.hub`: the member side of the ``jet`` format's frames;
- :mod:`.datasource`: the ``jet`` PySpark data source (imports PySpark);
- :mod:`.client`: the Spark side's connection to a member;
- :mod:`.driver`: the ``jet spark-source``/``jet spark-sink`` drivers and the local runner.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jet.connectors.spark.stages import SparkSink, SparkSource, spark_query, spark_sink, spark_source

__all__ = ["SparkSink", "SparkSource", "spark_query", "spark_sink", "spark_source"]


def __getattr__(name: str) -> Any:
    # On first use: a member imports .hub at start, which must not pull the Pipeline API in.
    if name not in __all__:
        raise AttributeError(f"module 'jet.connectors.spark' has no attribute {name!r}")
    from jet.connectors.spark import stages

    return getattr(stages, name)
