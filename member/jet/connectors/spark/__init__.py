"""Spark as the data access layer of a Jet job (see docs/spark.md).

- :mod:`.stages`: ``Sources.spark``, ``Sources.spark_query``, ``Sinks.spark`` descriptors;
- :mod:`.processors`: the Spark source and sink processors that run in the job;
- :mod:`.hub`: the member side of the ``jet`` format's frames;
- :mod:`.datasource`, :mod:`.streaming_datasource`: the ``jet`` PySpark data source (imports
  PySpark), sharing :mod:`.partition_io`;
- :mod:`.client`: the Spark side's connection to a member.

The Spark side of a job, which plans over whole pipelines, is :mod:`jet.spark`.
"""
