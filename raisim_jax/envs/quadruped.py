"""A quadruped (rsc/urdf/quadruped.urdf, 12 joints) learning to stand and walk on flat ground.

Action (12,) in [-1, 1]: PD position targets `nominal + action_scale * action` for the
joints (stable PD, kp 150, kd 3). Physics dt 5 ms, 4 substeps: 50 Hz control.
Observation (35,): base height, base quaternion (w, x, y, z), base linear and angular
velocity in the base frame, joint angles minus the nominal stance, joint velocities / 10.
Reward per step: forward-speed tracking exp(-(v_x - v*)^2 / 0.1) (v* = `target_speed`, 0 to
learn to stand), + 0.5 (z axis up) + 0.5 alive, - 0.01 |action|^2. Ends when the base drops
below 0.25 m or tilts past 60 degrees.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np

import raisim_jax as rj
from raisim_jax.envs.base import PhysicsEnv
from raisim_jax.math import quaternion

URDF = os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf", "quadruped.urdf")
LEG = (0.0, 0.7, -1.4)        # hip abduction, hip flexion, knee: the nominal stance
HEIGHT = 0.45


class QuadrupedEnv(PhysicsEnv):
  """See the module docstring."""

  def __init__(self, target_speed=0.5, action_scale=0.3, dtype="float32", time_step=5e-3,
               substeps=4, reset_noise=0.05):
    world = rj.World(dtype=dtype)
    world.setTimeStep(time_step)
    world.addGround()
    robot = world.addArticulatedSystem(URDF)
    self._nominal = np.array([0.0, 0.0, HEIGHT, 1.0, 0.0, 0.0, 0.0] + list(LEG) * 4)
    robot.setGeneralizedCoordinate(self._nominal)
    robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
    robot.setPdGains(np.r_[np.zeros(6), np.full(12, 150.0)], np.r_[np.zeros(6), np.full(12, 3.0)])
    robot.setPdTarget(self._nominal, np.zeros(18))
    world.setContactSolverDifferentiable(False)   # RL needs no reverse-mode gradient
    self._model, self._initial = world.compile()
    self.substeps = int(substeps)
    self.target_speed = float(target_speed)
    self.action_scale = float(action_scale)
    self.reset_noise = float(reset_noise)

  @property
  def action_size(self):
    return len(self._nominal) - 7        # one PD target per leg joint

  def _system(self, physics):
    return physics.articulated[0]

  def _reset_physics(self, key):
    system = self._system(self._initial)
    gc = system.generalized_coordinate
    noise = jax.random.uniform(key, (12,), gc.dtype, -self.reset_noise, self.reset_noise)
    gc = gc.at[7:].add(noise)
    return self._initial.replace(articulated=(system.replace(generalized_coordinate=gc,
                                                             p_target=gc),))

  def _control(self, physics, action):
    action = jnp.clip(action, -1.0, 1.0).astype(self._model.gravity.dtype)
    target = jnp.asarray(self._nominal, action.dtype).at[7:].add(self.action_scale * action)
    control = rj.Control.from_state(self._model, physics)
    return control.replace(articulated=(control.articulated[0].replace(p_target=target),))

  def _base(self, physics):
    """(height, quaternion, rotation base->world, linear velocity, angular velocity) with the
    velocities in the base frame."""
    system = self._system(physics)
    gc, gv = system.generalized_coordinate, system.generalized_velocity
    rotation = quaternion.to_matrix(gc[3:7])
    return gc[2], gc[3:7], rotation, rotation.T @ gv[:3], rotation.T @ gv[3:6]

  def _observe(self, physics):
    system = self._system(physics)
    height, quat, _, linear, angular = self._base(physics)
    joints = system.generalized_coordinate[7:] - jnp.asarray(self._nominal[7:], height.dtype)
    return jnp.concatenate([height[None], quat, linear, angular, joints,
                            system.generalized_velocity[6:] / 10.0])

  def _reward_done(self, before, after, action):
    height, _, rotation, linear, _ = self._base(after)
    upright = rotation[2, 2]
    speed = self._system(after).generalized_velocity[0]
    reward = (jnp.exp(-jnp.square(speed - self.target_speed) / 0.1) + 0.5 * upright + 0.5
              - 0.01 * jnp.sum(jnp.square(action)))
    done = (height < 0.25) | (upright < 0.5)
    return reward, done.astype(reward.dtype)
