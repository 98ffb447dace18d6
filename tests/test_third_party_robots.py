"""Real third-party robot files as users load them: every URDF of example-robot-data and
pybullet_data either loads or is refused with a ValueError that names the file and the
element at fault (never another exception, never a model that steps to NaN), and a real
quadruped dropped on the ground lands and stays finite, above the ground, without gaining
energy. The files are PyPI packages of the dev extra (example-robot-data, pybullet); their
dynamics against Pinocchio: tests/articulated/test_dynamics_vs_pinocchio.py."""

import glob
import os
import re
import warnings

import numpy as np
import pytest

import raisim_jax as rj
from tests.articulated.robots import dropped_on_the_ground, example_robot_data_files


def pybullet_data_files():
  import pybullet_data
  root = pybullet_data.getDataPath()
  return {os.path.relpath(p, root): p
          for p in sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True))
          if "random_urdfs" not in p}


def add_to_world(path):
  """(system or None, the ValueError or None, warnings) of loading `path` into a World."""
  world = rj.World()
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
      return world.addArticulatedSystem(path), None, caught
    except ValueError as error:
      return None, error, caught


# What each refused file is refused for (the rest must load).
REFUSED = {
    # example-robot-data
    "romeo_description/urdf/romeo.urdf": r"joint 'LHand' \(line \d+\): moves link 'LFinger11Link', but .* no mass",
    "romeo_description/urdf/romeo_laas_small.urdf": r"link 'body' \(line 327\): <inertia> is not positive semi-definite",
    "ur_description/urdf/ur3.urdf": r"<robot>: no links",
    # pybullet_data
    "bicycle/bike.urdf": r"joint 'handlebar_to_frontwheel' \(line 103\): malformed number",
    "biped/biped2d_pybullet.urdf": r"joint 'torso_to_rightleg' \(line 115\): malformed number",
    "cartpole.urdf": r"link 'slideBar' \(line 4\): the floating base and joint 'slider_to_cart' "
                     r"together .*the floating base link 'slideBar' has no mass",
    "humanoid/humanoid.urdf": r"malformed XML \(line 288\)",
    "kuka_iiwa/model_for_sdf.urdf": r"collision mesh of link 'lbr_iiwa_link_0', line 76: "
                                    r"collision mesh file '.*/meshes/coarse/link_0.stl' not found",
    "husky/husky.urdf": r"joint 'imu_joint' \(line 97\): malformed number",
    "plane.urdf": r"the floating base and everything it carries have no mass",
    "plane100.urdf": r"the floating base and everything it carries have no mass",
    "plane_implicit.urdf": r"unknown geometry <plane>",
    "plane_transparent.urdf": r"the floating base and everything it carries have no mass",
    "racecar/racecar_differential.urdf": r"mesh scale=\"1 1 1 1\" must have 1 or 3 numbers",
    "quadruped/microtaur/microtaur.urdf": r"rpy=\"-3.14159 1.57079 0 0\" must have 3 numbers",
    "samurai.urdf": r"the floating base and everything it carries have no mass",
    "sphere2red_nocol.urdf": r"link 'baseLink' \(line 3\): the floating base has no mass",
    "table/table.urdf": r"link 'baseLink' \(line 3\): the floating base has no mass",
    "torus_deform.urdf": r"<robot>: no links",
    "toys/concave_box.urdf": r"unknown geometry <cdf>",
    "tray/tray.urdf": r"the floating base and everything it carries have no mass",
    "tray/tray_textured2.urdf": r"the floating base and everything it carries have no mass",
    "tray/traybox.urdf": r"the floating base and everything it carries have no mass",
}


@pytest.mark.parametrize("source", ["example-robot-data", "pybullet_data"])
def test_every_third_party_urdf_loads_or_is_refused_naming_the_file_and_element(source):
  files = example_robot_data_files() if source == "example-robot-data" else pybullet_data_files()
  assert len(files) > 60
  loaded, refused = [], {}
  for name, path in files.items():
    system, error, _ = add_to_world(path)
    if error is None:
      assert system.getDOF() >= 0
      loaded.append(name)
    else:
      assert str(error).startswith(path + ": "), error
      refused[name] = str(error)
  expected = {name: pattern for name, pattern in REFUSED.items() if name in files}
  assert sorted(refused) == sorted(expected), refused
  for name, message in refused.items():
    assert re.search(expected[name], message), (name, message)
  assert len(loaded) > 50


def test_icub_loads_without_a_singularity_warning():
  """iCub's neck roll and yaw line up at the zero configuration with a point mass between
  them, so M is singular there; its neck joints are damped, which keeps the step's
  M_eff = M + dt diag(d) regular (it steps from zero), so the load says nothing about it."""
  system, error, caught = add_to_world(example_robot_data_files()["icub_description/robots/icub.urdf"])
  assert error is None and system.getDOF() > 0
  assert not [w for w in caught if "mass matrix" in str(w.message)], caught


def test_tiagos_placeholder_antennas_warn_and_the_robot_loads():
  """TIAGo's 1 mg antenna links carry indefinite (rounded) inertias; they are fixed to the
  base, whose merged inertia is positive definite: a warning naming each, not a refusal."""
  system, error, caught = add_to_world(example_robot_data_files()["tiago_description/robots/tiago.urdf"])
  assert error is None and system.getDOF() > 0
  messages = [str(w.message) for w in caught]
  for link in ("base_antenna_left_link", "base_antenna_right_link"):
    assert any(f"link '{link}'" in m and "used as given" in m for m in messages), messages


ANYMAL = "anymal_c_simple_description/urdf/anymal.urdf"


def test_anymal_dropped_on_the_ground_lands_and_stays_finite():
  """example-robot-data's ANYmal C (18 dofs, primitive collision bodies), dropped from 1 m
  above its nominal pose with no control: it lands, comes to rest above the ground, and its
  energy never grows by more than the position correction of its first touch (1% of the
  drop; a passive system cannot gain energy)."""
  robot, energy, rise = dropped_on_the_ground(example_robot_data_files()[ANYMAL], lift=1.0)
  assert np.all(np.isfinite(energy))
  assert rise < 0.01 * energy[0]
  # Unactuated, its legs fold and it comes to rest on its belly (base box 0.09 m above the
  # ground on its contacts), every body above the ground.
  assert robot.getGeneralizedCoordinate()[2] == pytest.approx(0.09, abs=0.01)
  assert min(robot.getBodyPosition(b)[2] for b in range(len(robot.getBodyNames()))) > 0.0
  assert np.abs(robot.getGeneralizedVelocity()).max() < 1e-3
  assert len(robot.getContacts()) >= 4


@pytest.mark.parametrize("name, lift", [("solo_description/robots/solo12.urdf", 0.5),
                                        ("go2_description/urdf/go2.urdf", 0.6)])
def test_robots_that_collide_through_meshes_land_on_them(name, lift):
  """solo12 (STL) and go2 (COLLADA) collide only through meshes (they fell through the ground
  before meshes collided): dropped with no control, each lands on the convex hulls of its
  links, comes to rest with its base above the ground and every contact at the ground
  (within 5 mm), and never gains more than 1% of its energy."""
  robot, energy, rise = dropped_on_the_ground(example_robot_data_files()[name], lift=lift)
  assert np.all(np.isfinite(energy))
  assert rise < 0.01 * energy[0]
  assert robot.getGeneralizedCoordinate()[2] > 0.03
  contacts = robot.getContacts()
  assert len(contacts) >= 4
  assert all(abs(c.getPosition()[2]) < 5e-3 for c in contacts)
  assert np.abs(robot.getGeneralizedVelocity()).max() < 1e-2
