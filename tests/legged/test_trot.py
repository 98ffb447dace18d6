"""The project's quadruped under a scripted trot (sinusoidal PD targets, diagonal legs in
phase) walks forward and does not fall; with its PD switched off it collapses onto the ground
and comes to rest without sinking into it (issue: articulated systems II)."""

import jax.numpy as jnp
import numpy as np
import pytest

from tests.legged import scenarios


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64], ids=["float32", "float64"])
def test_scripted_trot_moves_forward_and_stays_upright(dtype):
  world, robot, nominal, feet = scenarios.standing_world("quadruped", dtype)
  steps = 3000
  targets = scenarios.trot_targets(nominal, steps).astype(dtype)
  base, foot, depth, final = scenarios.simulate(world, feet, steps, targets)
  gc = np.asarray(final.articulated[0].generalized_coordinate, dtype=np.float64)
  assert np.all(np.isfinite(base)) and not bool(final.contacts.overflow)
  # Two seconds of trot carry the base forward (+x, the feet push backwards in stance) ...
  assert base[-1, 0] - base[1000, 0] > 0.3
  assert abs(base[-1, 1]) < 0.1
  # ... without falling: the base stays well above the ground and upright (body z axis
  # within ~15 degrees of the world's: the quaternion's w near 1 for a small yaw too).
  assert base[1000:, 2].min() > 0.6 * nominal[2]
  w, x, y, z = gc[3:7]
  body_z_up = 1.0 - 2.0 * (x * x + y * y)
  assert body_z_up > np.cos(np.radians(15.0))
  # Feet strike the ground every step: no link sinks more than 2 mm.
  assert depth.max() < 2e-3


def test_quadruped_without_pd_collapses_and_rests_on_the_ground():
  world, robot, nominal, feet = scenarios.standing_world("quadruped", jnp.float64)
  robot.setPdGains(np.zeros(18), np.zeros(18))
  base, foot, depth, final = scenarios.simulate(world, feet, 2000)
  assert np.all(np.isfinite(base))
  # Legs fold under the weight: the base ends far below its stance height but above ground,
  # at rest (the last 0.2 s barely move), with no link deeper than 2 mm into the ground.
  assert base[-1, 2] < 0.6 * nominal[2]
  assert base[-1, 2] > 0.0
  assert np.abs(base[-200:] - base[-1]).max() < 2e-3
  assert depth.max() < 2e-3
  assert int(np.sum(np.asarray(final.contacts.active))) >= 4
