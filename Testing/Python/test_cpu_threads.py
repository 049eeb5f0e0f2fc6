"""The CPU back end's adaptive team size (Code/Cxx/inc/base/CPUThreads.h):
while other processes keep every allowed CPU busy the team shrinks to one
thread, and it grows back when they stop; PYCA_ADAPTIVE_THREADS=0 and
SetCPUThreadsAdaptive(False) keep it fixed. ctest runs this file alone
(RUN_SERIAL): the idle half needs the machine to itself."""
import os
import subprocess
import sys
import time

import pytest

import PyCA.Core as ca
from PyCA._threads import _affinity_cpus as _allowed


def _team_after(want, seconds):
    """GetCPUThreads() polled (it measures every 100 ms) until it has said
    `want` three times running or `seconds` pass; what it said last."""
    deadline = time.monotonic() + seconds
    run, t = 0, None
    while time.monotonic() < deadline:
        t = ca.GetCPUThreads()
        run = run + 1 if t == want else 0
        if run >= 3:
            break
        time.sleep(0.06)
    return t


def test_api():
    m = ca.GetCPUMaxThreads()
    assert m >= 1
    assert 1 <= ca.GetCPUThreads() <= m
    assert ca.GetCPUThreadsAdaptive() is True
    ca.SetCPUThreadsAdaptive(False)
    try:
        assert ca.GetCPUThreadsAdaptive() is False
        assert ca.GetCPUThreads() == m
    finally:
        ca.SetCPUThreadsAdaptive(True)
    with pytest.raises(TypeError):
        ca.SetCPUThreadsAdaptive(None)


@pytest.mark.parametrize("value,adaptive", [('0', False), ('off', False), ('1', True), ('', True)])
def test_environment_switch(value, adaptive):
    code = ("import PyCA.Core as ca; m = ca.GetCPUMaxThreads(); t = ca.GetCPUThreads(); "
            "print(ca.GetCPUThreadsAdaptive(), t == m if not ca.GetCPUThreadsAdaptive() else 1 <= t <= m)")
    env = dict(os.environ, PYCA_ADAPTIVE_THREADS=value)
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(adaptive), 'True']


@pytest.mark.skipif(not os.path.exists('/proc/stat'), reason='needs Linux /proc/stat')
@pytest.mark.skipif(not 2 <= _allowed() <= 8, reason='needs 2 to 8 CPUs (one busy process per CPU)')
def test_team_shrinks_while_every_cpu_is_busy_and_grows_back():
    m = ca.GetCPUMaxThreads()
    if m < 2:
        pytest.skip('OpenMP allows one thread here')
    assert ca.GetCPUThreadsAdaptive()
    n = _allowed()
    hogs = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(n)]
    try:
        time.sleep(0.3)
        busy = _team_after(1, 10)
    finally:
        for p in hogs:
            p.kill()
        for p in hogs:
            p.wait()
    assert busy == 1
    # the operators keep working on the reduced team
    im = ca.Image3D(ca.GridInfo(ca.Vec3Di(64, 64, 64)), ca.MEM_HOST)
    ca.SetMem(im, 2.0)
    assert ca.Sum(im) == 2.0 * 64 ** 3
    assert _team_after(min(m, n), 10) == min(m, n)


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs fork')
def test_forked_child_measures_on_its_own():
    # the parent has measured (its samples and lock state are inherited)
    m = ca.GetCPUMaxThreads()
    for _ in range(3):
        ca.GetCPUThreads()
        time.sleep(0.11)
    pid = os.fork()
    if pid == 0:  # the child: measures afresh, never a team outside [1, max]
        code = 1
        try:
            im = ca.Image3D(ca.GridInfo(ca.Vec3Di(64, 64, 64)), ca.MEM_HOST)
            ok = True
            for _ in range(4):
                ca.SetMem(im, 1.0)
                ok = ok and ca.Sum(im) == 64 ** 3 and 1 <= ca.GetCPUThreads() <= m
                time.sleep(0.11)
            code = 0 if ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
