"""Legged-robot scenes shared by the legged tests: a quadruped under PD control on flat
ground, simulated with the pure core (one jitted scan), with per-step measurements."""

import os

import jax
import jax.numpy as jnp
import numpy as np

import raisim_jax as rj
from raisim_jax.dynamics import kinematics

RSC = os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf")

# name: (URDF path, foot frames, nominal joint angles per leg, initial base height, kp, kd)
ROBOTS = {
    "quadruped": (os.path.join(RSC, "quadruped.urdf"),
                  ("LF_foot_fixed", "RF_foot_fixed", "LH_foot_fixed", "RH_foot_fixed"),
                  (0.0, 0.7, -1.4), 0.45, 150.0, 3.0),
}
try:    # Unitree's A1 ships with pybullet (the dev extra); benchmarks/legged.py runs without it
  import pybullet_data
  ROBOTS["a1"] = (os.path.join(pybullet_data.getDataPath(), "a1", "a1.urdf"),
                  ("FR_toe_fixed", "FL_toe_fixed", "RR_toe_fixed", "RL_toe_fixed"),
                  (0.0, 0.8, -1.6), 0.42, 100.0, 2.0)
except ImportError:
  pass


def _example_robot_data(relative):
  """Absolute path of example-robot-data's robots/`relative` (the dev extra), or None."""
  import importlib.metadata
  try:
    files = importlib.metadata.files("example-robot-data") or []
  except importlib.metadata.PackageNotFoundError:
    return None
  paths = [str(f.locate()) for f in files if str(f).endswith("/robots/" + relative)]
  return paths[0] if paths else None


# solo12 (example-robot-data) collides only through STL meshes: it stands on the convex
# hulls of its feet. Its hind knees bend the other way (per-leg nominal angles).
if _example_robot_data("solo_description/robots/solo12.urdf"):
  ROBOTS["solo12"] = (_example_robot_data("solo_description/robots/solo12.urdf"),
                      ("FL_ANKLE", "FR_ANKLE", "HL_ANKLE", "HR_ANKLE"),
                      (0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6),
                      0.26, 6.0, 0.2)


def leg_angles(leg):
  """(12,) nominal joint angles: `leg` given per leg (12) or for all four (3)."""
  return np.asarray(list(leg) if len(leg) == 12 else list(leg) * 4, np.float64)


def standing_world(name, dtype, dt=1e-3):
  """(world, robot, nominal gc, foot frame indices): the robot above the ground, PD on its
  12 joints towards the nominal stance."""
  path, feet, leg, height, kp, kd = ROBOTS[name]
  world = rj.World(dtype=dtype)
  world.setTimeStep(dt)
  world.addGround()
  robot = world.addArticulatedSystem(path)
  nominal = np.r_[0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0, leg_angles(leg)]
  robot.setGeneralizedCoordinate(nominal)
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains(np.r_[np.zeros(6), np.full(12, kp)], np.r_[np.zeros(6), np.full(12, kd)])
  robot.setPdTarget(nominal, np.zeros(18))
  return world, robot, nominal, [robot.getFrameIdxByName(f) for f in feet]


def simulate(world, feet, steps, targets=None):
  """Runs `steps` steps in one jitted scan; targets (steps, nq) optional PD position targets.

  Returns numpy arrays: base position (steps, 3), foot positions (steps, 4, 3), deepest
  contact penetration (steps,), and the final state."""
  model, state = world.compile()
  system_model = model.articulated[0]
  feet = np.asarray(feet)

  def body(state, target):
    if target is not None:
      control = rj.Control.from_state(model, state)
      control = control.replace(articulated=(control.articulated[0].replace(p_target=target),))
      state = rj.step(model, state, control)
    else:
      state = rj.step(model, state)
    system = state.articulated[0]
    kin = kinematics.forward_kinematics(system_model, system.generalized_coordinate)
    foot_pos, _ = kinematics.frame_poses(system_model, kin)
    depth = jnp.max(jnp.where(state.contacts.active, state.contacts.depth, 0.0))
    return state, (system.generalized_coordinate[:3], foot_pos[feet], depth)

  run = jax.jit(lambda s, t: jax.lax.scan(body, s, t, length=steps))
  final, (base, foot, depth) = run(state, targets)
  return np.asarray(base), np.asarray(foot), np.asarray(depth), final


# Trot phases per leg (LF, RF, LH, RH): diagonal pairs LF+RH and RF+LH swing together.
TROT_PHASES = (0.0, np.pi, np.pi, 0.0)


def trot_targets(nominal, steps, dt=1e-3, frequency=2.0, hip_swing=0.15, knee_lift=0.3,
                 ramp=(0.5, 1.0)):
  """PD position targets (steps, nq) of a scripted trot about the `nominal` stance.

  Per leg (joints HAA, HFE, KFE from gc index 7): HFE = nominal - hip_swing sin(s) and
  KFE = nominal - knee_lift max(0, cos s), s = 2 pi f t + phase; the knee lifts the foot while
  the hip swings it forward, the diagonal pair in stance pushes the base forward. The amplitude
  ramps linearly from 0 at ramp[0] s to full at ramp[1] s so the robot first settles."""
  t = np.arange(steps) * dt
  scale = np.clip((t - ramp[0]) / (ramp[1] - ramp[0]), 0.0, 1.0)
  targets = np.tile(np.asarray(nominal, dtype=np.float64), (steps, 1))
  for leg, phase in enumerate(TROT_PHASES):
    s = 2.0 * np.pi * frequency * t + phase
    targets[:, 7 + 3 * leg + 1] -= scale * hip_swing * np.sin(s)
    targets[:, 7 + 3 * leg + 2] -= scale * knee_lift * np.maximum(0.0, np.cos(s))
  return targets
