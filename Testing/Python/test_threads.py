"""PyCA._threads: the OpenMP defaults set at ``import PyCA`` (a short spin at
barriers; a thread count that respects the cgroup CPU quota and the MPI ranks
on the node), and that variables the user set are left alone."""
import json
import os
import subprocess
import sys

import pytest

from PyCA import _threads


def _cgroup(tmp_path, cpu_max=None, v1=None):
    root = tmp_path / 'cg'
    root.mkdir()
    if cpu_max is not None:
        (root / 'cpu.max').write_text(cpu_max + '\n')
    if v1 is not None:
        (root / 'cpu').mkdir()
        (root / 'cpu' / 'cpu.cfs_quota_us').write_text('%d\n' % v1[0])
        (root / 'cpu' / 'cpu.cfs_period_us').write_text('%d\n' % v1[1])
    return str(root)


@pytest.mark.parametrize("text,want", [('max 100000', None), ('200000 100000', 2),
                                       ('150000 100000', 2), ('50000 100000', 1),
                                       ('garbage', None)])
def test_cgroup_v2_quota(tmp_path, text, want):
    assert _threads.cgroup_cpu_quota(_cgroup(tmp_path, cpu_max=text)) == want


@pytest.mark.parametrize("v1,want", [((-1, 100000), None), ((300000, 100000), 3)])
def test_cgroup_v1_quota(tmp_path, v1, want):
    assert _threads.cgroup_cpu_quota(_cgroup(tmp_path, v1=v1)) == want


def test_no_cgroup_files(tmp_path):
    assert _threads.cgroup_cpu_quota(str(tmp_path / 'missing')) is None


@pytest.mark.parametrize("env,want", [({}, 1), ({'OMPI_COMM_WORLD_LOCAL_SIZE': '4'}, 4),
                                      ({'MPI_LOCALNRANKS': '2'}, 2),
                                      ({'SLURM_NTASKS_PER_NODE': '3(x2)'}, 3),
                                      ({'SLURM_NTASKS_PER_NODE': '8,4'}, 8),
                                      ({'MPI_LOCALNRANKS': 'x'}, 1), ({'MPI_LOCALNRANKS': '0'}, 1)])
def test_local_ranks(env, want):
    assert _threads.local_ranks(env) == want


def test_default_threads_divides_the_quota_among_ranks(tmp_path, monkeypatch):
    monkeypatch.setattr(_threads, '_affinity_cpus', lambda: 16)
    root = _cgroup(tmp_path, cpu_max='400000 100000')
    assert _threads.default_threads({}, root) == 4
    assert _threads.default_threads({'MPI_LOCALNRANKS': '2'}, root) == 2
    assert _threads.default_threads({'MPI_LOCALNRANKS': '8'}, root) == 1
    assert _threads.default_threads({}, str(tmp_path / 'none')) == 16


def test_configure_sets_only_what_the_user_left_unset(monkeypatch):
    monkeypatch.setattr(_threads, '_affinity_cpus', lambda: 8)
    monkeypatch.setattr(_threads, 'cgroup_cpu_quota', lambda root='': None)
    monkeypatch.setattr(_threads, '_gomp_loaded', lambda: False)
    env = {}
    info = _threads.configure(env)
    assert env == {'GOMP_SPINCOUNT': str(_threads.SPIN_COUNT)}      # 8 threads: libgomp's own default
    assert info['threads'] == 8 and info['spin_count'] == _threads.SPIN_COUNT
    env = {'OMPI_COMM_WORLD_LOCAL_SIZE': '4'}
    _threads.configure(env)
    assert env['OMP_NUM_THREADS'] == '2'
    for user in ({'OMP_WAIT_POLICY': 'active'}, {'GOMP_SPINCOUNT': 'infinite'}):
        env = dict(user, OMP_NUM_THREADS='3', MPI_LOCALNRANKS='8')
        info = _threads.configure(env)
        assert env == dict(user, OMP_NUM_THREADS='3', MPI_LOCALNRANKS='8')
        assert info['spin_count'] is None and info['threads'] is None


def _import_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ('GOMP_SPINCOUNT', 'OMP_WAIT_POLICY', 'OMP_NUM_THREADS')}
    env.update(extra)
    code = ('import os, json, PyCA, PyCA.Core; print(json.dumps([os.environ.get(k) for k in '
            '("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_NUM_THREADS")] + [PyCA.threading_info()]))')
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_pyca_sets_the_spin_count_before_the_runtime_loads():
    spin, policy, nthreads, info = _import_env({})
    assert spin == str(_threads.SPIN_COUNT) and policy is None
    assert info['spin_count'] == _threads.SPIN_COUNT and info['runtime_loaded'] is False
    spin, policy, nthreads, info = _import_env({'OMP_WAIT_POLICY': 'PASSIVE', 'OMP_NUM_THREADS': '1'})
    assert spin is None and policy == 'PASSIVE' and nthreads == '1' and info['threads'] is None
    assert info['max_threads'] == 1 and info['threads_now'] == 1 and info['adaptive'] is True
