"""PostgreSQL connectors on psycopg 3 (see docs/postgres.md):

- ``query_source`` — ``Sources.postgres``: a query's rows, split by ranges of a column over the
  source processors of the cluster (``ranges``);
- ``sink`` — ``Sinks.postgres``: batched ``COPY`` / upserts (``table_writer``), exactly-once
  through ``PREPARE TRANSACTION`` (``prepared_transactions`` with the shared transaction pool);
- ``cdc_source`` — ``Sources.postgres_cdc``: change records from a logical replication slot
  (``replication_slot``), decoded from ``pgoutput`` (``pgoutput``);
- ``connection`` — connections with timeouts, and errors naming the server, never the password.

Imports go one way: factories -> processors -> connection/pgoutput; nothing here imports the
engine's cluster wing.
"""

from jet.connectors.postgres.cdc_source import ChangeRecord
from jet.connectors.postgres.connection import PostgresConnectionError, PostgresError, PostgresTableError
from jet.connectors.postgres.replication_slot import create_slot_and_publication

__all__ = ["ChangeRecord", "PostgresConnectionError", "PostgresError", "PostgresTableError",
           "create_slot_and_publication"]
