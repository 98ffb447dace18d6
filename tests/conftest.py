"""Test configuration: float64 everywhere (RaiSim's precision; float32 paths opt in).

Every test runs by default, CI included: long simulations and oracle sweeps carry the `slow`
marker only so that a quick local run can leave them out with `-m "not slow"`."""

import os

# XLA:CPU's older (LLVM IR) fusion emitters instead of its MLIR ones, for the whole process and
# the Python processes it starts (set before JAX starts its CPU backend): the MLIR emitters
# build a context and rewrite-pattern sets per fusion, which made up most of an unoptimized
# compile. Measured one core, -O0: a 4-body step 39.7 -> 13.8 s, the quadruped's 100-step
# rollout 73 -> 35 s with its step 8.3 -> 3.2 ms. The same HLO program; optimized compiles
# gain little (52.9 / 68.6 -> 51.6 / 47.3 s), so the package leaves the choice to its users.
SUITE_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false"
if "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + SUITE_XLA_FLAGS).strip()

import jax  # noqa: E402
import pytest  # noqa: E402

from raisim_jax.oo import compilation_cache  # noqa: E402

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


# Tests compile with `jax_disable_most_optimizations` (LLVM at -O0, no expensive passes; the
# same HLO program) unless marked `xla_optimized` (a test, a parametrized function, or a whole
# file through `pytestmark`): backend compilation is most of a cold suite (2-core AVX2 CPU:
# 3,550 of 7,050 test-seconds of its first 300 tests), and the float32 hopper test compiled in
# 89 s instead of 121 s. Marked are the tests whose time goes into running programs (long
# simulations, 1,024-world batches, optimization loops against Python oracles: unoptimized
# they run ~2x slower) and those pinned to the optimized program's rounding (bit-equal paths,
# float32 vs float64 at a validity boundary, a gradient through 300 sweeps of a sliding box):
# unoptimized, LLVM rounds differently in places. The flag is not part of jit's in-memory
# cache key, so the caches are cleared where it changes between tests (the persistent cache,
# whose key holds it, still serves both kinds). Python processes a test starts (README
# examples, notebooks, multi-process runs) get the same choice through the environment
# variable JAX reads the flag from.
def _set_xla_optimized(node):
  unoptimized = node.get_closest_marker("xla_optimized") is None
  os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = str(int(unoptimized))
  if jax.config.read("jax_disable_most_optimizations") != unoptimized:
    jax.clear_caches()
    jax.config.update("jax_disable_most_optimizations", unoptimized)


@pytest.fixture(autouse=True, scope="module")
def _compile_options_of_the_file(request):
  """The file's own choice (its `pytestmark`) for its module-scoped fixtures."""
  _set_xla_optimized(request.node)
  yield
  jax.config.update("jax_disable_most_optimizations", False)
  os.environ.pop("JAX_DISABLE_MOST_OPTIMIZATIONS", None)


@pytest.fixture(autouse=True)
def _compile_options_of_the_test(request, _compile_options_of_the_file):
  """XLA's full optimization for tests marked `xla_optimized`, most optimizations off
  elsewhere."""
  _set_xla_optimized(request.node)
  yield


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_functions():
  """Drop JAX's compiled functions after each test module: a whole-suite session otherwise
  keeps every executable alive (memory grows), and once segfaulted inside XLA's compiler late
  in the run (the test passed on its own and in its module)."""
  yield
  jax.clear_caches()


# The files that take longest (worker-seconds in a cold suite on 2 cores, 2026-12-07, from
# `benchmarks/suite_compile_time.py`, with the LLVM-IR emitters above and before this stop's
# cuts of PPO, the batched contacts, the oracle sweeps, the resting runs and the implicit
# gradient; every file above 150 s), run first so that no worker is left with a long file
# while the others have finished: pytest-xdist's `--dist loadfile` hands files out in
# collection order once its reordering by test count is off. Scheduling only: a stale entry
# costs time, never correctness.
_LONGEST_FILES_FIRST = (
    "tests/solver/test_implicit_gradient.py",           # 1,132 s
    "tests/solver/test_gauss_seidel.py",                # 858 s
    "tests/test_envs.py",                               # 666 s
    "tests/test_resting_stacks.py",                     # 578 s
    "tests/test_benchmarks.py",                         # 541 s
    "tests/test_contacts.py",                           # 486 s
    "tests/collision/test_narrowphase.py",              # 484 s
    "tests/test_notebooks.py",                          # 472 s
    "tests/test_resting_sphere_pyramid.py",             # 428 s
    "tests/collision/test_mesh_collision.py",           # 359 s
    "tests/test_readme_and_demo.py",                    # 343 s
    "tests/collision/test_scenarios.py",                # 325 s
    "tests/test_world_meshes.py",                       # 316 s
    "tests/legged/test_standing.py",                    # 315 s
    "tests/test_dense_linalg.py",                       # 284 s
    "tests/test_multi_device.py",                       # 248 s
    "tests/legged/test_articulated_contacts.py",        # 246 s
    "tests/articulated/test_dynamics_vs_pinocchio.py",  # 246 s
    "tests/test_bounces.py",                            # 237 s
    "tests/test_world_files.py",                        # 206 s
    "tests/test_smoothing.py",                          # 200 s
    "tests/legged/test_trot.py",                        # 188 s
    "tests/solver/test_static_friction.py",             # 183 s
    "tests/test_trajectory_optimization.py",            # 181 s
    "tests/test_third_party_robots.py",                 # 170 s
    "tests/test_batching_and_gradients.py",             # 152 s
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
