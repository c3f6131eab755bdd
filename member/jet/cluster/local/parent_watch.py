"""Make a child process die with its parent (the local cluster's members), belt and braces.

1. ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (Linux): the kernel kills this process when the thread that
   started it exits, even after a SIGKILL of the parent.
2. A thread reading stdin, a pipe from the parent: EOF means the parent is gone (or closed it on
   purpose), and the process exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
from typing import Callable

log = logging.getLogger("jet.cluster.local.parent_watch")
PR_SET_PDEATHSIG = 1


PR_SET_NAME = 15


def set_process_name(name: str) -> bool:
    """Name this process in ``top`` and ``ps -o comm`` (Linux ``prctl``; at most 15 bytes kept)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0) == 0
    except OSError:
        return False


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
            return False
        return True
    except OSError as e:
        log.warning("prctl is not available: %s", e)
        return False


def exit_with_parent(expected_parent: int | None = None,
                     on_parent_gone: Callable[[], None] | None = None) -> None:
    """Die with the parent: the death signal, and a stdin watcher calling ``on_parent_gone``
    (default: ``os._exit(1)``) at EOF. Exits at once if the parent is already gone."""
    set_parent_death_signal()
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)  # the parent died before the death signal was armed

    def watch() -> None:
        try:
            while os.read(0, 4096):  # the raw descriptor: no buffer lock held at interpreter exit
                pass
        except (OSError, ValueError):
            pass
        log.warning("the parent process closed our stdin; exiting")
        (on_parent_gone or (lambda: os._exit(1)))()

    threading.Thread(target=watch, name="jet-parent-watch", daemon=True).start()
