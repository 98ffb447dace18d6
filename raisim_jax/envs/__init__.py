"""Batched RL environments on Brax's `envs.Env` interface (reset(key) / step(state, action)),
so `brax.training` trainers (PPO, SAC) run on them unchanged.

Needs the `rl` extra (brax): `pip install -e ".[rl]"`. Environments:
- `QuadrupedEnv`: rsc/urdf/quadruped.urdf on flat ground, PD targets as actions, rewarded for
  standing upright at its height and walking forward at a commanded speed.
- `HopperEnv`: Gymnasium's Hopper (its MJCF file, through the MJCF reader and its motors),
  with Gymnasium's observation, reward and termination.
"""

from raisim_jax.envs.base import PhysicsEnv as PhysicsEnv
from raisim_jax.envs.hopper import HopperEnv as HopperEnv
from raisim_jax.envs.quadruped import QuadrupedEnv as QuadrupedEnv

__all__ = ["PhysicsEnv", "HopperEnv", "QuadrupedEnv"]
