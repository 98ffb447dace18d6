"""A robot's links against mesh objects (World.addMesh): the project's quadruped (sphere feet,
capsule legs) standing on a static mesh platform stands exactly as on the BOX primitive of
the same block, the oracle (its sphere-box and box-capsule pairs are exact, as the
sphere-mesh and capsule-mesh pairs are on the block's convex hull)."""

import os
import shutil

import jax.numpy as jnp
import numpy as np
import pybullet_data

import raisim_jax as rj
from tests.legged import scenarios

PLATFORM_TOP = 1.0


def _on_platform(kind, tmp_path):
  """(world, feet): the standing quadruped of scenarios.ROBOTS above a static 1 m block
  (pybullet_data's cube.obj as a CONVEX_HULL mesh, or addBox(1, 1, 1)) on the ground."""
  path, feet, leg, height, kp, kd = scenarios.ROBOTS["quadruped"]
  world = rj.World(dtype=jnp.float64)
  world.setTimeStep(1e-3)
  world.addGround()
  if kind == "mesh":
    cube = shutil.copy(os.path.join(pybullet_data.getDataPath(), "cube.obj"), tmp_path)
    block = world.addMesh(cube, 100.0, 1.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  else:
    block = world.addBox(1.0, 1.0, 1.0, 100.0)
  block.setBodyType(rj.BodyType.STATIC)
  block.setPosition(0.0, 0.0, PLATFORM_TOP / 2)
  robot = world.addArticulatedSystem(path)
  nominal = np.r_[0.0, 0.0, PLATFORM_TOP + height, 1.0, 0.0, 0.0, 0.0,
                  scenarios.leg_angles(leg)]
  robot.setGeneralizedCoordinate(nominal)
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains(np.r_[np.zeros(6), np.full(12, kp)], np.r_[np.zeros(6), np.full(12, kd)])
  robot.setPdTarget(nominal, np.zeros(18))
  return world, [robot.getFrameIdxByName(f) for f in feet]


def test_a_quadruped_stands_on_a_mesh_platform_as_on_a_box(tmp_path):
  """Dropped onto the block and standing for 2 s under PD, float64: the base and the feet
  follow the box run to 1e-6 m at every step, the feet end on the block's top face (their
  spheres' radius above it, 1 mm), and nothing overflows."""
  runs = {}
  for kind in ("mesh", "box"):
    world, feet = _on_platform(kind, tmp_path)
    runs[kind] = scenarios.simulate(world, feet, 2000)
  (base, foot, _, final), (base_box, foot_box, _, _) = runs["mesh"], runs["box"]
  assert np.all(np.isfinite(base)) and not bool(final.contacts.overflow)
  np.testing.assert_allclose(base, base_box, atol=1e-6)
  np.testing.assert_allclose(foot, foot_box, atol=1e-6)
  np.testing.assert_allclose(foot[-1, :, 2], PLATFORM_TOP + 0.02, atol=1e-3)
