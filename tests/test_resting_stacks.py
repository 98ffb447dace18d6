"""Resting stacks stay put (float64 and float32): boxes, a sphere pyramid, curved shapes.

One 5-second trajectory per scene and precision: no body moves more than 1 mm at any step,
no contact penetrates more than 1 mm, the contact buffer never overflows. (10 s until stop 77,
which halved them to fit CI's 90 minutes: the six runs took ~1,000 s of the cold suite.)
"""

import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from tests.test_contacts import _roll

# Runs long: XLA's full optimization (tests/conftest.py).
pytestmark = pytest.mark.xla_optimized


def _box_stack(dtype):
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.addGround()
  boxes = []
  for k in range(5):
    box = world.addBox(0.5, 0.5, 0.2, 1.0)
    box.setPosition(0, 0, 0.1 + 0.2 * k)
    boxes.append(box)
  return world, boxes


def _sphere_pyramid(dtype):
  """10 spheres: a triangle of 6 on the ground, 3 in its pockets, 1 on top."""
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.addGround()
  r = 0.1
  spheres = []
  layers = [(0, 3), (1, 2), (2, 1)]  # (layer, spheres per triangle side)
  for layer, side in layers:
    height = r + layer * 2 * r * np.sqrt(2 / 3)
    offset = layer * np.array([r, r / np.sqrt(3)])
    for i in range(side):
      for j in range(side - i):
        x, y = offset + 2 * r * np.array([j + 0.5 * i, i * np.sqrt(3) / 2])
        sphere = world.addSphere(r, 1.0)
        sphere.setPosition(x, y, height)
        spheres.append(sphere)
  assert len(spheres) == 10
  return world, spheres


def _curved_stack(dtype):
  """Flat contacts of curved shapes: a cylinder standing on a box, a cone standing on that
  cylinder's cap and a cylinder lying on its side on the box (feature manifolds)."""
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.addGround()
  box = world.addBox(1.0, 1.0, 0.4, 2.0)
  box.setPosition(0, 0, 0.2)
  standing = world.addCylinder(0.15, 0.5, 1.0)
  standing.setPosition(0.2, 0.1, 0.65)
  cone = world.addCone(0.2, 0.4, 0.5)
  cone.setPosition(0.2, 0.1, 0.9 + 0.1)  # base on the cap, COM a quarter height above it
  lying = world.addCylinder(0.1, 0.6, 1.0)
  lying.setPosition(-0.3, 0.0, 0.5)
  lying.setOrientation(np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0)
  return world, [box, standing, cone, lying]


def check_rests_for_5_seconds(build, dtype):
  """No body moves more than 1 mm at any step of 5 s, no contact penetrates more than 1 mm,
  the contact buffer never overflows."""
  world, bodies = build(dtype)
  # The solver must hold the stack, not sleeping: placed at rest, it would sleep from step 3.
  world.setSleepingEnabled(False)
  start = np.array([b.getPosition() for b in bodies])
  trajectory = _roll(world, 5.0)
  positions = np.asarray(trajectory.bodies.position[:, 1:1 + len(bodies)], np.float64)
  assert np.all(np.isfinite(positions))
  drift = np.abs(positions - start).max()   # over every step of the 5 s
  assert drift < 1e-3, drift
  depth = np.asarray(trajectory.contacts.depth)[np.asarray(trajectory.contacts.active)]
  assert depth.max() < 1e-3, depth.max()
  assert not bool(np.asarray(trajectory.contacts.overflow).any())
  return trajectory


# The sphere pyramid (150 sweeps every step in float32, ~150 s per precision) is in
# test_resting_sphere_pyramid.py, so that `--dist loadfile` runs it beside these.
@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("build", [_box_stack, _curved_stack], ids=["boxes", "cylinders-cone"])
def test_stack_rests_for_5_seconds(build, dtype):
  check_rests_for_5_seconds(build, dtype)
