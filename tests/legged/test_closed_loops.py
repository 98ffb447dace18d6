"""Closed loops: URDF `<constraints><pin/>` blocks solved as bilateral rows of the contact
problem (dynamics/pins.py). Oracles: the pin's geometric definition (both anchors at one world
point, recomputed from forward kinematics of the simulated coordinates), energy conservation of
an undamped linkage, and the loop's one degree of freedom."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pybullet_data
import pytest

import raisim_jax as rj
from raisim_jax.dynamics import energy, kinematics
from tests.legged.scenarios import RSC

FOURBAR = os.path.join(RSC, "fourbar.urdf")
NOMINAL = np.array([0.2, -0.5, 0.1])


def _pin_error(system_model, pins, gc):
  """|anchor1 - anchor2| in the world frame for each row of gc (T, nq) -> (T, P)."""
  def one(q):
    pos, rot, _ = kinematics.body_poses(system_model, q)
    p1 = pos[np.asarray(pins.body1)] + jnp.einsum("pij,pj->pi", rot[np.asarray(pins.body1)],
                                                   pins.anchor1)
    p2 = pos[np.asarray(pins.body2)] + jnp.einsum("pij,pj->pi", rot[np.asarray(pins.body2)],
                                                   pins.anchor2)
    return jnp.linalg.norm(p1 - p2, axis=-1)
  return np.asarray(jax.vmap(one)(gc))


def test_pin_anchor_on_body2_is_derived_at_the_nominal_configuration():
  world = rj.World()
  robot = world.addArticulatedSystem(FOURBAR)
  model, _ = world.compile()
  pins = model.pins
  assert pins.count == 1 and pins.body1 == (2,) and pins.body2 == (3,)
  # Planar geometry by hand at q = (0.2, -0.5, 0.1), rotations about +y (x -> (cos, 0, -sin)):
  # the coupler end in the world, then in the rocker frame.
  def rot_y(a):
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
  base = np.array([0, 0, 1.0])
  crank_end = base + rot_y(0.2) @ [0, 0, -0.2]
  coupler_end = crank_end + rot_y(0.2 - 0.5) @ [0.4, 0, 0]
  rocker_pivot = base + np.array([0.4, 0, 0])
  expected = rot_y(0.1).T @ (coupler_end - rocker_pivot)
  np.testing.assert_allclose(np.asarray(pins.anchor2[0]), expected, atol=1e-12)
  np.testing.assert_allclose(np.asarray(pins.anchor1[0]), [0.4, 0, 0], atol=1e-15)
  robot.setGeneralizedCoordinate(NOMINAL)
  np.testing.assert_allclose(robot.getPosition(2, [0.4, 0, 0]),
                             robot.getPosition(3, expected), atol=1e-12)


@pytest.mark.parametrize("dtype,tolerance", [(jnp.float64, 1e-4), (jnp.float32, 1e-4)])
def test_four_bar_keeps_its_pin_closed_for_10_s(dtype, tolerance):
  """Released from the nominal configuration under gravity, the linkage swings for 10 s at
  dt = 1e-3: the pin error stays below 1e-4 m, and without damping the energy changes by less than 2% of the swing's
  potential energy."""
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  robot = world.addArticulatedSystem(FOURBAR)
  robot.setState(NOMINAL, [0.0, 0.0, 0.0])
  model, state = world.compile()
  final, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 10_000)
  gc = np.asarray(trajectory.articulated[0].generalized_coordinate, np.float64)
  gv = trajectory.articulated[0].generalized_velocity
  assert np.all(np.isfinite(gc))
  # It really moves (the crank swings through a large arc), and the loop holds.
  assert np.ptp(gc[:, 0]) > 0.2
  error = _pin_error(model.articulated[0], model.pins, jnp.asarray(gc, dtype))
  assert error.max() < tolerance, error.max()
  # Energy (kinetic + potential) against the swing of the potential energy.
  system_model = model.articulated[0]

  def energies(q, u):
    kin = kinematics.forward_kinematics(system_model, q, u)
    return (energy.total_energy(system_model, kin, u, model.gravity),
            energy.potential_energy(system_model, kin, model.gravity))

  total, potential = map(np.asarray, jax.vmap(energies)(
      trajectory.articulated[0].generalized_coordinate, gv))
  # Measured: 1.3% (semi-implicit Euler's oscillation plus the pin's slight dissipation).
  assert np.ptp(total) < 0.02 * np.ptp(potential), (np.ptp(total), np.ptp(potential))


MINITAUR_CONSTRAINTS = """<constraints nominal_config="0 0 0.35 0 0 1 0 -1.5708 -2.2 -1.5708 -2.2 -1.5708 -2.2 -1.5708 -2.2 -1.5708 -2.2 -1.5708 -2.2 -1.5708 -2.2 -1.5708 -2.2">
    <pin body1="lower_leg_front_rightR_link" body2="lower_leg_front_rightL_link" anchor="0.0 0.0 0.2"/>
    <pin body1="lower_leg_front_leftR_link" body2="lower_leg_front_leftL_link" anchor="0.0 0.0 0.2"/>
    <pin body1="lower_leg_back_rightR_link" body2="lower_leg_back_rightL_link" anchor="0.0 0.0 0.2"/>
    <pin body1="lower_leg_back_leftR_link" body2="lower_leg_back_leftL_link" anchor="0.0 0.0 0.2"/>
</constraints>"""


def test_minitaur_with_the_specs_constraints_block_stands_on_its_closed_legs():
  """pybullet_data's minitaur with the spec's constraints block (four five-bar legs closed by
  pins): it loads, and dropped on the ground with PD on its 8 motors (knees passive, as on the
  robot) it lands and stands on the closed legs: pins within 1e-4 m, base above the ground."""
  directory = os.path.join(pybullet_data.getDataPath(), "quadruped")
  with open(os.path.join(directory, "minitaur.urdf")) as f:
    text = f.read().replace("</robot>", MINITAUR_CONSTRAINTS + "\n</robot>")
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  robot = world.addArticulatedSystem(text, directory)
  assert robot.getDOF() == 22
  nominal = np.array([0, 0, 0.35, 0, 0, 1, 0] + [-1.5708, -2.2] * 8)
  nominal[2] = 0.2   # close above the ground
  robot.setGeneralizedCoordinate(nominal)
  motors = np.r_[np.zeros(6), np.tile([1.0, 0.0], 8)]
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains(20.0 * motors, 0.5 * motors)
  robot.setPdTarget(nominal, np.zeros(22))
  model, state = world.compile()
  assert model.pins.count == 4
  final, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 800)
  gc = np.asarray(trajectory.articulated[0].generalized_coordinate)
  assert np.all(np.isfinite(gc))
  error = _pin_error(model.articulated[0], model.pins, jnp.asarray(gc))
  assert error.max() < 1e-4, error.max()
  assert 0.05 < gc[-1, 2] < 0.2
  assert bool(np.any(np.asarray(final.contacts.active)))
