"""The store's one error type."""


class SnapshotError(Exception):
    """A snapshot or job record that is missing, damaged or cannot be written.

    The message names the job, the slot or export and the path involved.
    """
