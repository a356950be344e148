"""Stopping a child process: SIGTERM, a grace period, SIGKILL, reaped.

The one way p4vtep and its tests, demo and benchmarks stop what they started
(BMv2 switches, gobgpd, FRR daemons, etcd members, controller processes,
helper scripts), instead of terminate/wait/kill written at every call site.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from typing import Any

# After SIGKILL a process is gone as soon as the kernel tears it down; a wait
# this long means it is stuck in the kernel, which is an error worth seeing.
KILL_WAIT_SECONDS = 10.0


def stop_process(
    process: subprocess.Popen[Any],
    timeout: float = 5.0,
    *,
    group: bool = False,
) -> int:
    """Stop ``process`` and reap it; returns its exit status (negative: the
    signal that ended it, as ``Popen.returncode``).

    SIGTERM, then up to ``timeout`` seconds for it to exit, then SIGKILL.
    ``timeout=0`` sends SIGKILL at once (a crash, or a process whose clean
    exit does not matter). A stopped process (SIGSTOP, e.g. a daemon a test
    froze) is sent SIGCONT after SIGTERM so it can act on it. An
    already-exited process is only reaped.

    ``group=True`` signals the process group whose leader ``process`` is (it
    was started with ``start_new_session=True``), so its own children get the
    same signals while the leader is alive (until it is reaped its id
    cannot name another group); only the leader is waited for, and nothing
    is signalled once it has been reaped. A process that is not the
    leader of its group is refused with ``ValueError`` rather than signalling
    a group we did not start.

    Raises ``subprocess.TimeoutExpired`` if the process is still there
    ``KILL_WAIT_SECONDS`` after SIGKILL.
    """
    return stop_processes([process], timeout, group=group)[0]


def stop_processes(
    processes: Iterable[subprocess.Popen[Any]],
    timeout: float = 5.0,
    *,
    group: bool = False,
) -> list[int]:
    """``stop_process`` for several processes at once: all of them get SIGTERM
    together and share one ``timeout`` (daemons that shut down side by side
    take as long as the slowest, not the sum); their exit statuses in order."""
    if timeout < 0:
        raise ValueError(f"timeout must be >= 0, got {timeout}")
    every = list(processes)
    # Reaped ones are left alone: their ids may name other processes (groups) by now.
    live = [p for p in every if p.poll() is None]
    if group:
        for process in live:
            if _group_of(process) not in (None, process.pid):
                raise ValueError(f"process {process.pid} does not lead its process group")
    if timeout > 0:
        for process in live:
            _send(process, signal.SIGTERM, group)
            _send(process, signal.SIGCONT, group)
        deadline = time.monotonic() + timeout
        for process in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
    for process in live:
        if process.poll() is None:
            _send(process, signal.SIGKILL, group)
    for process in live:
        process.wait(timeout=KILL_WAIT_SECONDS)
    return [process.returncode for process in every]


def _group_of(process: subprocess.Popen[Any]) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:  # reaped elsewhere (os.waitpid): nothing to check
        return None


def _send(process: subprocess.Popen[Any], sig: signal.Signals, group: bool) -> None:
    if not group:
        process.send_signal(sig)  # does nothing once the process has been reaped
        return
    # The leader is not reaped yet, so its id is still its group's; an empty
    # group (ProcessLookupError) has nothing left to signal.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
