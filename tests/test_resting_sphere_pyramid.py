"""The 10-sphere pyramid rests for 10 s (float64 and float32); see test_resting_stacks.py.

A file of its own: each run takes ~400 s on one core (the statically indeterminate contact
set keeps the solver at its 150-sweep cap), and `--dist loadfile` schedules whole files.
"""

import jax.numpy as jnp
import pytest

from tests.test_resting_stacks import _sphere_pyramid, check_rests_for_10_seconds

# Runs long: XLA's full optimization (tests/conftest.py).
pytestmark = pytest.mark.xla_optimized


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32], ids=["float64", "float32"])
def test_sphere_pyramid_rests_for_10_seconds(dtype):
  check_rests_for_10_seconds(_sphere_pyramid, dtype)
