"""Connections to PostgreSQL with a timeout on everything, and errors that name the server and
the table but never the password."""

from __future__ import annotations

from typing import Any

CONNECT_TIMEOUT_S = 10
"""libpq's ``connect_timeout`` unless the DSN sets one."""
STATEMENT_TIMEOUT_MS = 60_000
"""The server cancels a statement running longer (``statement_timeout``); a fetch from a cursor
is a statement of its own, so a long read is bounded per chunk, not in total."""
LOCK_TIMEOUT_MS = 60_000
"""How long a write waits for a row lock (a prepared transaction of a lost member holds its rows
until a restored processor commits or rolls it back)."""
TCP_USER_TIMEOUT_MS = 30_000
"""How long sent data may stay unacknowledged before the connection counts as broken, so a
vanished server fails the job instead of hanging it."""
SERVER_OUTAGE_S = 30.0
"""How long the exactly-once sink reconnects to a server that went away (a restart) before it
fails the job naming the server."""
RECONNECT_PAUSE_S = 1.0
"""Pause between two attempts to reconnect."""
KEEPALIVE = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3"}


class PostgresError(RuntimeError):
    """A PostgreSQL connector failed; the message names the server (and table), never the password."""


class PostgresConnectionError(PostgresError, ConnectionError):
    """The server cannot be reached, or refused the login."""


class PostgresTableError(PostgresError, LookupError):
    """A table (or column) the connector needs is not there."""


def _psycopg():
    try:
        import psycopg
    except ImportError as error:  # the connector is an extra
        raise ImportError("the PostgreSQL connectors need psycopg 3: pip install 'jet-on-k8s[postgres]'") from error
    return psycopg


def dsn_fields(dsn: str) -> dict[str, str]:
    """The fields of a libpq DSN (``key=value ...`` or a ``postgresql://`` URL)."""
    psycopg = _psycopg()
    try:
        return psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as error:
        raise ValueError(f"not a valid PostgreSQL DSN: {scrub(str(error), dsn)}") from None


def describe(dsn: str) -> str:
    """``user@host:port/dbname``: where a DSN points, without its password."""
    fields = dsn_fields(dsn)
    user = fields.get("user")
    where = f"{fields.get('host') or fields.get('hostaddr') or 'localhost'}:{fields.get('port') or 5432}"
    return f"{user + '@' if user else ''}{where}/{fields.get('dbname') or user or ''}"


def scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN's password (if any) replaced by ``***``."""
    try:
        password = _psycopg().conninfo.conninfo_to_dict(dsn).get("password")
    except Exception:  # noqa: BLE001 - an unparsable DSN: hide it whole
        return text.replace(dsn, "***") if dsn else text
    return text.replace(str(password), "***") if password else text


def connect(dsn: str, what: str, *, autocommit: bool = False, statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
            application_name: str = "jet") -> Any:
    """A ``psycopg.Connection`` with connect, statement, lock and TCP timeouts set; a
    :class:`PostgresConnectionError` naming ``what`` and the server when that fails."""
    psycopg = _psycopg()
    fields = dsn_fields(dsn)
    extra = {key: value for key, value in {"connect_timeout": str(CONNECT_TIMEOUT_S),
                                           "tcp_user_timeout": str(TCP_USER_TIMEOUT_MS),
                                           "application_name": application_name, **KEEPALIVE}.items()
             if key not in fields}
    options = f"-c statement_timeout={statement_timeout_ms} -c lock_timeout={LOCK_TIMEOUT_MS}"
    if fields.get("options"):
        options = f"{fields['options']} {options}"
    try:
        return psycopg.connect(dsn, autocommit=autocommit, options=options, **extra)
    except psycopg.OperationalError as error:
        reason = scrub(str(error).strip(), dsn)
        raise PostgresConnectionError(f"{what}: cannot connect to PostgreSQL at {describe(dsn)}: {reason}") from None


def statement_error(error: Exception, what: str, subject: str, dsn: str) -> PostgresError:
    """A clear error for a failed statement about ``subject`` (``"table 'orders'"``, ``"the
    query '...'"``): a missing table or column, a lost connection, or else what the server said."""
    psycopg = _psycopg()
    diagnostic = getattr(error, "diag", None)
    message = scrub((diagnostic and diagnostic.message_primary) or str(error).strip(), dsn)
    if isinstance(error, psycopg.errors.UndefinedTable) and subject.startswith("table "):
        return PostgresTableError(f"{what}: {subject} does not exist in {describe(dsn)} ({message})")
    if isinstance(error, (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)):
        return PostgresTableError(f"{what}: {message} ({subject} in {describe(dsn)})")
    if isinstance(error, psycopg.OperationalError):
        return PostgresConnectionError(f"{what}: the connection to {describe(dsn)} failed ({subject}): {message}")
    return PostgresError(f"{what}: {message} ({subject} in {describe(dsn)})")
