"""p4vtep.processes.stop_process against real child processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from p4vtep.processes import stop_process, stop_processes

# A Python child that says "ready" once its SIGTERM disposition is set, so the
# test never signals it before it is in the state under test.
IGNORES_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)
EXITS_ON_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def python_child(code: str, **kwargs) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kwargs
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def state(pid: int) -> str | None:
    """The kernel's state letter for ``pid`` (Z: zombie), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def running(pid: int) -> bool:
    return state(pid) not in (None, "Z")


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_a_process_that_exits_on_sigterm_is_not_killed():
    process = python_child(EXITS_ON_TERM)
    started = time.monotonic()
    assert stop_process(process, timeout=10) == 3  # its own exit, not SIGKILL's -9
    assert time.monotonic() - started < 5
    assert process.returncode == 3
    assert state(process.pid) is None  # reaped


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout():
    process = python_child(IGNORES_TERM)
    started = time.monotonic()
    assert stop_process(process, timeout=0.5) == -signal.SIGKILL
    assert time.monotonic() - started >= 0.5
    assert state(process.pid) is None


def test_timeout_zero_kills_at_once():
    process = python_child(EXITS_ON_TERM)  # would exit with 3 on SIGTERM
    assert stop_process(process, timeout=0) == -signal.SIGKILL


def test_a_stopped_process_is_resumed_to_act_on_sigterm():
    process = python_child(EXITS_ON_TERM)
    process.send_signal(signal.SIGSTOP)
    assert wait_for(lambda: state(process.pid) == "T")
    assert stop_process(process, timeout=10) == 3


def test_an_exited_process_is_reaped_and_its_status_returned():
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    assert wait_for(lambda: state(process.pid) == "Z")  # exited, not reaped
    assert stop_process(process) == 7
    assert state(process.pid) is None


def test_an_already_reaped_process_is_left_alone():
    process = subprocess.Popen(["true"])
    assert process.wait(timeout=10) == 0
    assert stop_process(process) == 0
    assert stop_process(process, group=True) == 0  # nothing signalled: no error


def test_several_processes_share_one_grace_period():
    stubborn = [python_child(IGNORES_TERM) for _ in range(2)]
    polite = python_child(EXITS_ON_TERM)
    gone = subprocess.Popen(["true"])
    gone.wait(timeout=10)
    started = time.monotonic()
    statuses = stop_processes([stubborn[0], polite, gone, stubborn[1]], timeout=1)
    took = time.monotonic() - started
    assert statuses == [-signal.SIGKILL, 3, 0, -signal.SIGKILL]
    assert 1 <= took < 2  # one second of grace for all, not one each
    assert all(state(p.pid) is None for p in (*stubborn, polite))


def test_negative_timeout_is_refused():
    process = subprocess.Popen(["true"])
    try:
        with pytest.raises(ValueError, match="timeout must be >= 0"):
            stop_process(process, timeout=-1)
    finally:
        process.wait(timeout=10)


# The leader of a new session starts a grandchild (``grandchild``: its code),
# prints the grandchild's pid once it is ready, and sleeps.
GROUP_LEADER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', sys.argv[1]],\n"
    "                         stdout=subprocess.PIPE, text=True)\n"
    "child.stdout.readline()\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def group_leader(
    grandchild: str, leader_ignores_term: bool = False
) -> tuple[subprocess.Popen[str], int]:
    prelude = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    process = subprocess.Popen(
        [sys.executable, "-c", (prelude if leader_ignores_term else "") + GROUP_LEADER, grandchild],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    pid = int(process.stdout.readline())
    assert os.getpgid(pid) == process.pid
    return process, pid


def test_group_sends_sigterm_to_the_whole_group():
    process, grandchild = group_leader(EXITS_ON_TERM)
    try:
        assert stop_process(process, timeout=5, group=True) == -signal.SIGTERM
        assert wait_for(lambda: not running(grandchild))
    finally:
        kill_group(process.pid)


def test_without_group_only_the_process_is_stopped():
    process, grandchild = group_leader(EXITS_ON_TERM)
    try:
        assert stop_process(process, timeout=5) == -signal.SIGTERM
        time.sleep(0.3)
        assert running(grandchild)
    finally:
        kill_group(process.pid)
    assert wait_for(lambda: not running(grandchild))


def test_group_kills_the_group_when_its_leader_ignores_sigterm():
    process, grandchild = group_leader(IGNORES_TERM, leader_ignores_term=True)
    try:
        assert stop_process(process, timeout=0.5, group=True) == -signal.SIGKILL
        # SIGKILL went to the group: the grandchild is gone too (reparented
        # to init, which may take a moment to reap it).
        assert wait_for(lambda: not running(grandchild))
    finally:
        kill_group(process.pid)


def test_group_refuses_a_process_that_does_not_lead_its_group():
    process = python_child(IGNORES_TERM)  # in the test runner's own group
    try:
        with pytest.raises(ValueError, match="does not lead its process group"):
            stop_process(process, group=True)
        assert running(process.pid)  # nothing was signalled
    finally:
        assert stop_process(process, timeout=0) == -signal.SIGKILL


def kill_group(pgid: int) -> None:
    """Clean-up: whatever the test left of the session it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
