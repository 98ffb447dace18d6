"""Test robots: (our description, compiled model, Pinocchio oracle)."""

import functools
import os
import re
import warnings

import jax.numpy as jnp
import numpy as np
import pybullet_data

import raisim_jax as rj
from raisim_jax.dynamics.tree import compile_articulated
from raisim_jax.types import JOINT_FLOATING, JOINT_SPHERICAL
from raisim_jax.io.urdf import load_urdf
from tests.articulated import pinocchio_oracle

RSC = os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf")
PB = pybullet_data.getDataPath()


def _strip_decl(text):
  return re.sub(r"<\?xml[^>]*\?>", "", text)


def _fix_base(text, base_link):
  """Attach `base_link` to a root link named 'world' (RaiSim's fixed base)."""
  world = (f'<link name="world"/><joint name="world_fixed" type="fixed"><parent link="world"/>'
           f'<child link="{base_link}"/></joint>')
  return re.sub(r"(<robot[^>]*>)", r"\1" + world, text, count=1)


# example-robot-data (a dev dependency): name -> path under its robots/ directory.
EXAMPLE_ROBOT_DATA = {
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "tiago": "tiago_description/robots/tiago.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
}


def example_robot_data_files():
  """{path under example-robot-data's robots/: absolute path} of its URDFs (the package
  installs them under cmeel.prefix)."""
  import importlib.metadata
  paths = [str(f.locate()) for f in importlib.metadata.files("example-robot-data")
           if str(f).endswith(".urdf")]
  return {p.split("/robots/", 1)[1]: p for p in sorted(paths)}


@functools.lru_cache(maxsize=None)
def robot(name):
  if name == "a1":
    text = _strip_decl(open(os.path.join(PB, "a1/a1.urdf")).read())
    desc = load_urdf(os.path.join(PB, "a1/a1.urdf"))
    oracle = pinocchio_oracle.from_urdf_text(desc, text, floating=True)
  elif name == "kuka":
    text = _strip_decl(open(os.path.join(PB, "kuka_iiwa/model.urdf")).read())
    desc = load_urdf(_fix_base(text, "lbr_iiwa_link_0"))
    oracle = pinocchio_oracle.from_urdf_text(desc, text, floating=False)
  elif name == "all_joints":
    desc = load_urdf(os.path.join(RSC, "all_joints.urdf"))
    oracle = pinocchio_oracle.from_description(desc)
  elif name == "fixed_arm":
    path = os.path.join(RSC, "fixed_arm.urdf")
    desc = load_urdf(path)
    text = _strip_decl(open(path).read())
    text = re.sub(r'<link name="world"/>\s*<joint name="world_to_base".*?</joint>', "", text,
                  flags=re.S)
    oracle = pinocchio_oracle.from_urdf_text(desc, text, floating=False)
    # Pinocchio's base sits at the origin: move our root to the origin for a direct comparison
    desc.bodies[0].joint_pos = np.zeros(3)
    desc.bodies[0].joint_rot = np.eye(3)
  elif name in EXAMPLE_ROBOT_DATA:
    path = example_robot_data_files()[EXAMPLE_ROBOT_DATA[name]]
    desc = load_urdf(path)
    oracle = pinocchio_oracle.from_urdf_text(desc, _strip_decl(open(path).read()),
                                             floating=not desc.fixed_base)
  else:
    raise KeyError(name)
  model = compile_articulated(desc, jnp.float64)
  return desc, model, oracle


def dropped_on_the_ground(path, lift, steps=1500, dt=1e-3):
  """(robot, energy (steps + 1,), largest rise of the energy over any stretch) of the robot
  file at `path` in an OO World with a ground, its floating base lifted by `lift` from its
  nominal pose and left to fall with no control for `steps` steps of `dt`. Load warnings
  (mesh collision bodies, placeholder inertias) are silenced: the loading tests check them."""
  world = rj.World()
  world.setTimeStep(dt)
  world.addGround()
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    robot = world.addArticulatedSystem(path)
  q = robot.getGeneralizedCoordinate()
  q[2] += lift
  robot.setGeneralizedCoordinate(q)
  gravity = np.asarray(world.getGravity())
  energy = [robot.getEnergy(gravity)]
  for _ in range(steps):
    world.integrate()
    energy.append(robot.getEnergy(gravity))
  energy = np.asarray(energy)
  return robot, energy, max(energy[k:].max() - energy[k] for k in range(len(energy)))


def random_state(desc, rng):
  """Random (q, u, tau) in RaiSim's convention."""
  q = []
  for b in desc.bodies:
    if b.joint_type == JOINT_FLOATING:
      quat = rng.normal(size=4)
      q += list(rng.normal(size=3)) + list(quat / np.linalg.norm(quat))
    elif b.joint_type == JOINT_SPHERICAL:
      quat = rng.normal(size=4)
      q += list(quat / np.linalg.norm(quat))
    elif b.joint_type != 0:
      q.append(rng.uniform(-1.5, 1.5))
  q = np.array(q)
  return q, rng.normal(size=desc.dof), rng.normal(size=desc.dof) * 5.0
