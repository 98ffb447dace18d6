"""Gymnasium's Hopper (the `Hopper-v5` task) on its own MJCF file, read by the MJCF reader.

Model: gymnasium/envs/mujoco/assets/hopper.xml (timestep 2 ms, three motors of gear 200 on the
thigh, leg and foot joints, controls clipped to [-1, 1]); 4 substeps per action, as
Gymnasium's frame_skip. Observation (11,): MuJoCo's qpos[1:] (torso height and angle, three
joint angles) and qvel clipped to [-10, 10]. Reward: forward velocity of the torso + 1 (healthy)
- 1e-3 |action|^2. Ends when unhealthy: torso height <= 0.7, |torso angle| >= 0.2, or any of
qpos[2:] / qvel outside [-100, 100] (Gymnasium's defaults).
"""

import os
import warnings

import jax
import jax.numpy as jnp

import raisim_jax as rj
from raisim_jax.envs.base import PhysicsEnv

MJCF = os.path.join(os.path.dirname(__import__("gymnasium").__file__), "envs", "mujoco",
                    "assets", "hopper.xml")


class HopperEnv(PhysicsEnv):
  """See the module docstring."""

  def __init__(self, dtype="float32", substeps=4, reset_noise=5e-3, path=MJCF):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")     # the visual-only elements the reader skips
      world = rj.World(path, dtype=dtype)
    world.setContactSolverDifferentiable(False)
    robot = [o for o in world.getObjList()
             if o.getObjectType() == rj.ObjectType.ARTICULATED_SYSTEM][0]
    self._actuation = world.mjcfActuation[robot.getName()]
    # MuJoCo's rootz is ours plus its `ref`: the torso's height at our zero configuration.
    torso = robot.getFrameIdxByLinkName("torso")
    self._height_offset = float(robot.getFramePosition(torso)[2])
    self._model, self._initial = world.compile()
    self.substeps = int(substeps)
    self.reset_noise = float(reset_noise)

  @property
  def action_size(self):
    return len(self._actuation.names)

  def _reset_physics(self, key):
    system = self._initial.articulated[0]
    k1, k2 = jax.random.split(key)
    gc, gv = system.generalized_coordinate, system.generalized_velocity
    noise = lambda k, x: jax.random.uniform(k, x.shape, x.dtype, -self.reset_noise,  # noqa
                                            self.reset_noise)
    return self._initial.replace(articulated=(system.replace(
        generalized_coordinate=gc + noise(k1, gc), generalized_velocity=gv + noise(k2, gv)),))

  def _control(self, physics, action):
    force = self._actuation.generalized_force(action).astype(self._model.gravity.dtype)
    control = rj.Control.from_state(self._model, physics)
    return control.replace(articulated=(control.articulated[0].replace(
        feedforward_force=force),))

  def _qpos(self, physics):
    """MuJoCo's qpos (rootx, rootz, rooty, thigh, leg, foot)."""
    gc = physics.articulated[0].generalized_coordinate
    return gc.at[1].add(self._height_offset)

  def _observe(self, physics):
    gv = physics.articulated[0].generalized_velocity
    return jnp.concatenate([self._qpos(physics)[1:], jnp.clip(gv, -10.0, 10.0)])

  def _reward_done(self, before, after, action):
    x_before, qpos = self._qpos(before)[0], self._qpos(after)
    gv = after.articulated[0].generalized_velocity
    velocity = (qpos[0] - x_before) / self.dt
    reward = velocity + 1.0 - 1e-3 * jnp.sum(jnp.square(action))
    state = jnp.concatenate([qpos[2:], gv])
    healthy = ((qpos[1] > 0.7) & (jnp.abs(qpos[2]) < 0.2)
               & jnp.all(jnp.abs(state) < 100.0))
    return reward, (~healthy).astype(reward.dtype)
