"""The shared part of the environments: a World compiled once into (Model, State), stepped
`substeps` times per action with the pure core, inside Brax's `State` (the physics State is
its `pipeline_state`).

Everything after construction is pure and traceable: Brax's wrappers vmap `reset` and `step`
over the batch and `jit` the trainer around them.
"""

import jax
import jax.numpy as jnp

try:
  from brax.envs.base import Env as _BraxEnv
  from brax.envs.base import State as EnvState
except ImportError as error:   # pragma: no cover (the rl extra is part of dev)
  raise ImportError("raisim_jax.envs needs brax: pip install -e '.[rl]'") from error

import raisim_jax as rj


class PhysicsEnv(_BraxEnv):
  """A Brax environment on a raisim_jax world (subclasses implement the task).

  Subclasses set `self._model`, `self._initial` (physics State) and `self.substeps`, and
  implement `action_size`, `_reset_physics(key)`, `_control(physics, action)`,
  `_observe(physics)` and `_reward_done(before, after, action)`.
  """

  substeps: int = 1

  @property
  def backend(self) -> str:
    return "raisim_jax"

  @property
  def observation_size(self) -> int:
    """Length of `_observe`'s vector (traced abstractly once, nothing is computed)."""
    return int(jax.eval_shape(self._observe, self._initial).shape[0])

  @property
  def dt(self):
    """Seconds of simulated time per environment step."""
    return self._model.time_step * self.substeps

  def _physics_step(self, physics, control):
    """`substeps` physics steps with the same control."""
    return jax.lax.fori_loop(0, self.substeps,
                             lambda _, s: rj.step(self._model, s, control), physics)

  def reset(self, rng):
    physics = self._reset_physics(rng)
    zero = jnp.zeros(())       # JAX's default float, as Brax's wrappers make their flags
    return EnvState(pipeline_state=physics, obs=self._observe(physics), reward=zero,
                    done=zero, metrics={"reward": zero}, info={})

  def step(self, state, action):
    dtype = self._model.gravity.dtype       # the world's precision, whatever the policy's
    action = jnp.asarray(action, dtype)
    before = state.pipeline_state
    after = self._physics_step(before, self._control(before, action))
    reward, done = self._reward_done(before, after, action)
    flags = jnp.zeros(()).dtype
    reward, done = reward.astype(flags), done.astype(flags)
    finite = after.finite     # False once anything in the world became NaN/inf
    done = jnp.where(finite, done, 1.0)
    # A world that diverged is ended and its observation zeroed (no NaN reaches the learner).
    obs = jnp.where(finite, self._observe(after), 0.0)
    reward = jnp.where(finite, reward, 0.0)
    return state.replace(pipeline_state=after, obs=obs, reward=reward, done=done,
                         metrics={**state.metrics, "reward": reward})
