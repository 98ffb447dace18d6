"""Test configuration: float64 everywhere (RaiSim's precision; float32 paths opt in).

Every test runs by default, CI included: long simulations and oracle sweeps carry the `slow`
marker only so that a quick local run can leave them out with `-m "not slow"`."""

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
