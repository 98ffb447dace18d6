"""A quadruped dropped on the ground under PD control stands (issue: articulated contacts and
PD): third-party URDFs (pybullet_data's A1; example-robot-data's solo12, which touches the
ground only through the convex hulls of its STL meshes) and the project's own primitive
quadruped, 10 s at dt = 1e-3 in float32 and float64."""

import jax.numpy as jnp
import numpy as np
import pytest

from tests.legged import scenarios


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", ["a1", "quadruped", "solo12"])
def test_quadruped_stands_for_10_seconds(name, dtype):
  world, robot, nominal, feet = scenarios.standing_world(name, dtype)
  base, foot, depth, final = scenarios.simulate(world, feet, 10_000)
  assert np.all(np.isfinite(base)) and not bool(final.contacts.overflow)
  # Dropped from above its stance: it lands, then the base settles within 1 cm of its
  # steady height (mean of the last second) and stays there.
  steady = base[-1000:, 2].mean()
  assert 0.5 * nominal[2] < steady < nominal[2]
  assert np.abs(base[1000:, 2] - steady).max() < 0.01
  # Once standing (after 1 s), the feet do not slide more than 5 mm.
  slide = np.linalg.norm(foot[1000:, :, :2] - foot[1000, :, :2], axis=-1).max()
  assert slide < 5e-3
  # No link penetrates the ground by more than 2 mm, landing included.
  assert depth.max() < 2e-3
  # Four feet carry the robot: every foot is on the ground at the end.
  assert np.all(np.abs(foot[-1, :, 2] - foot[-1, 0, 2]) < 1e-3)
