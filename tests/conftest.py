"""Test configuration: float64 everywhere (RaiSim's precision; float32 paths opt in).

Every test runs by default, CI included: long simulations and oracle sweeps carry the `slow`
marker only so that a quick local run can leave them out with `-m "not slow"`."""

import os


def _pin_xdist_worker_to_one_core():
  """Under `pytest -n N` with N <= the usable cores, worker i runs on core i only. Each
  worker's XLA otherwise sizes its thread pools (compiler and runtime) to every core, so N
  workers run N x cores threads on N cores: measured on 2 cores, two heavy test files took
  226 s side by side unpinned and 151 s pinned (the whole suite: see docs/architecture.md,
  Tests). Subprocesses a test starts inherit the worker's core. Runs before JAX starts its
  backend, which reads the affinity mask when it sizes the pools."""
  worker = os.environ.get("PYTEST_XDIST_WORKER", "")
  count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
  cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
  if worker.startswith("gw") and 1 < count <= len(cores):
    os.sched_setaffinity(0, {cores[int(worker[2:])]})


_pin_xdist_worker_to_one_core()

import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_functions():
  """Drop JAX's compiled functions after each test module: a whole-suite session otherwise
  keeps every executable alive (memory grows), and once segfaulted inside XLA's compiler late
  in the run (the test passed on its own and in its module)."""
  yield
  jax.clear_caches()


# The files that take longest (seconds of one suite run on 2 cores, pinned workers), run first
# so that no worker is left with a long file while the other has finished: pytest-xdist's
# `--dist loadfile` hands files out in collection order once its reordering by test count is
# off. Scheduling only: a stale entry costs time, never correctness.
_LONGEST_FILES_FIRST = (
    "tests/test_envs.py",
    "tests/test_notebooks.py",
    "tests/legged/test_standing.py",
    "tests/test_resting_stacks.py",
    "tests/test_resting_sphere_pyramid.py",
    "tests/test_readme_and_demo.py",
    "tests/legged/test_articulated_contacts.py",
    "tests/collision/test_narrowphase.py",
    "tests/test_multi_device.py",
    "tests/test_smoothing.py",
    "tests/test_world_files.py",
    "tests/test_stack_gradients.py",
    "tests/test_contacts.py",
)


def pytest_configure(config):
  if hasattr(config.option, "loadscopereorder"):
    config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
  def rank(item):
    path = item.nodeid.split("::", 1)[0]
    return (_LONGEST_FILES_FIRST.index(path) if path in _LONGEST_FILES_FIRST
            else len(_LONGEST_FILES_FIRST))
  items.sort(key=rank)      # stable: every file's tests stay together and in order
