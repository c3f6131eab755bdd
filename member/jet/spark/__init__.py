"""The Spark side of a job: the part of a pipeline Spark runs, beside the members.

Above ``jet.pipeline`` and ``jet.connectors`` (it plans over whole pipelines and DAGs): the
SparkSession and its failures (:mod:`.session`), the batch side (:mod:`.batch_side`: Spark
reads feeding a job's Spark sources, writes of its Spark sinks), the streaming side
(:mod:`.stream_side`) and Spark's home of byte-compiled Python (:mod:`.spark_home`). Called by
the CLI and the local runner (``jet.local``); the connector itself (the ``jet`` data source and
the Spark processors) is :mod:`jet.connectors.spark`.
"""
