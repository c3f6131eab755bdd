"""The ``jet`` command's entry point: a ``jet run`` that will boot local members starts their
fork server before anything else is imported.

The fork server imports the member's code (about 0.25 s); started here, that overlaps with the
command's own imports and the job file's loading instead of following them, which takes about
0.1 s off every ``jet run`` with members. The command line is only glanced at; :mod:`jet.cli`
parses it. A fork server started for a command that then runs no members ends with this
process, which such a run ends with :func:`exit_now`.
"""

from __future__ import annotations

import os
import sys

from jet.cluster.local import DEFAULT_LOCAL_MEMBERS


def main() -> None:
    """``jet``: prestart the members' fork server when the command is a ``jet run`` with members,
    then run :func:`jet.cli.main`; such a run then ends without the interpreter's finalization."""
    with_members = boots_members(sys.argv[1:], DEFAULT_LOCAL_MEMBERS)
    if with_members:
        from jet.cluster.local import forked_members

        forked_members.prestart()
    from jet.cli import main as cli_main

    if not with_members:
        cli_main()
        return
    try:
        cli_main()
    except SystemExit as ended:
        exit_now(ended.code)
    exit_now(0)


def exit_now(code: object) -> None:
    """End this process with ``code`` (as ``sys.exit`` takes it) once its output is flushed,
    skipping the interpreter's finalization: after a ``jet run`` with members that is mostly
    gRPC's, about 45 ms of nothing, since the members are gone and the results printed. A run
    that started Spark in this process exits the usual way (its session's shutdown hooks)."""
    if "pyspark" in sys.modules:
        sys.exit(code)
    import logging

    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: nothing more can be said
    os._exit(code or 0)


def boots_members(args: list[str], default_members: int) -> bool:
    """Whether ``jet <args>`` looks like a ``jet run`` on member processes: the command (after the
    group's only option, ``--log-level``) is ``run``, and neither ``--members 1`` nor ``--dot``
    nor ``--help`` is given."""
    rest = args
    if rest[:1] == ["--log-level"]:
        rest = rest[2:]
    elif rest[:1] and rest[0].startswith("--log-level="):
        rest = rest[1:]
    if rest[:1] != ["run"] or any(arg in ("--dot", "--help") for arg in args):
        return False
    members = default_members
    for index, arg in enumerate(args):
        if arg == "--members" and index + 1 < len(args):
            members = _int_or(args[index + 1], members)
        elif arg.startswith("--members="):
            members = _int_or(arg.split("=", 1)[1], members)
    return members > 1


def _int_or(text: str, default: int) -> int:
    try:
        return int(text)
    except ValueError:
        return default
