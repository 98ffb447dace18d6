"""Test configuration: float64 everywhere (RaiSim's precision; float32 paths opt in).

Every test runs by default, CI included: long simulations and oracle sweeps carry the `slow`
marker only so that a quick local run can leave them out with `-m "not slow"`."""

import os

import jax
import pytest

from raisim_jax.oo import compilation_cache

# Opt-in experiment (RAISIM_JAX_TEST_PIN=1): each xdist worker on its own core from start-up,
# so XLA sizes its pools to one core and two workers' step executions stop thrashing.
if os.environ.get("RAISIM_JAX_TEST_PIN") == "1" and os.environ.get("PYTEST_XDIST_WORKER"):
  _cores = sorted(os.sched_getaffinity(0))
  os.sched_setaffinity(0, {_cores[int(os.environ["PYTEST_XDIST_WORKER"][2:]) % len(_cores)]})

jax.config.update("jax_enable_x64", True)

# The persistent compilation cache from the first compile on, in the OO layer's directory (the
# user's cache directory unless configured or turned off, README "Editing a world between
# steps"): backend compilation is ~60% of a cold suite's time (4,250 of 6,970 test-seconds on
# 2 cores), and the workers share what one compiled. Otherwise only compiles after a worker's
# first `World` were cached.
compilation_cache.enable_default()


# Files that run XLA's fully optimized programs: those whose time goes into running them
# (long simulations, 1,024-world batches, optimization loops, Python oracles), and those that
# pin results to the optimized program's rounding (bit-equal paths, float32 vs float64 at a
# validity boundary, gradients at 1e-5 of central differences through 300 sweeps): unoptimized,
# LLVM rounds differently in places (integrate1 + integrate2 vs integrate: 1 ulp apart). Every
# other file compiles with `jax_disable_most_optimizations` (LLVM at -O0, no expensive passes;
# the same HLO program): backend compilation is most of a cold suite (2-core AVX2 CPU: 3,550 of
# 7,050 test-seconds of its first 300 tests), and the float32 hopper test compiled in 89 s
# instead of 121 s. The flag is not part of jit's in-memory cache key: it is set per file, and
# the caches are cleared between files.
_OPTIMIZED_FILES = frozenset((
    "tests/test_resting_sphere_pyramid.py",
    "tests/test_resting_stacks.py",
    "tests/test_envs.py",
    "tests/collision/test_narrowphase.py",
    "tests/test_smoothing.py",
    "tests/test_contacts.py",
    "tests/test_readme_and_demo.py",
    "tests/test_trajectory_optimization.py",
    "tests/test_benchmarks.py",
    "tests/test_world_api.py",
    "tests/collision/test_scenarios.py",
    "tests/solver/test_gauss_seidel.py",
))


@pytest.fixture(autouse=True, scope="module")
def _compile_options_of_the_file(request):
  """XLA's full optimization for `_OPTIMIZED_FILES`, most optimizations off elsewhere."""
  path = os.path.relpath(str(request.path), os.path.dirname(os.path.dirname(__file__)))
  jax.config.update("jax_disable_most_optimizations", path not in _OPTIMIZED_FILES)
  yield
  jax.config.update("jax_disable_most_optimizations", False)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_functions():
  """Drop JAX's compiled functions after each test module: a whole-suite session otherwise
  keeps every executable alive (memory grows), and once segfaulted inside XLA's compiler late
  in the run (the test passed on its own and in its module)."""
  yield
  jax.clear_caches()


# The files that take longest (in one suite run on 2 cores), run first
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
