"""Float32 Gauss-Seidel stops at the rounding of the velocities, not at the sweep cap.

Regression (#9 item 5, #12 item 6): Gymnasium's hopper in float32, its foot on the ground
with one contact while the leg swings at 3 rad/s. The impulse change the foot's row asks for
each sweep (~1e-6 N s) was partly lost to rounding in the generalized velocities, so the next
sweep repeated it: a constant drift to the 150-sweep cap on 3 of 6 steps, ending 5e-5 N s
(0.5% of the impulse) away from the float64 solution. The state below is world 7 of 256
random-action hoppers (seed 0) at its 10th action; oracle: the same steps in float64.
"""

import jax
import jax.numpy as jnp
import numpy as np

import raisim_jax as rj
from raisim_jax.envs import HopperEnv

GC = [-0.0105825, -0.03075891, -0.11390643, -0.08389325, -0.08937938, 0.15115055]
GV = [-0.09191301, -0.06687648, -2.5949473, -1.4701189, -3.050688, 2.365024]
ACTION = [-0.2934569, 0.43635556, -0.49542618]
STEPS = 6


def _foot_impulses(dtype):
  """(sweeps (STEPS,), foot-contact impulse (STEPS, 3)) of STEPS physics steps."""
  env = HopperEnv(dtype=dtype)
  initial = env._initial
  system = initial.articulated[0].replace(generalized_coordinate=jnp.asarray(GC, dtype),
                                          generalized_velocity=jnp.asarray(GV, dtype))
  state = initial.replace(articulated=(system,))
  control = env._control(state, jnp.asarray(ACTION, dtype))
  step = jax.jit(rj.step)
  sweeps, impulses = [], []
  for _ in range(STEPS):
    state = step(env._model, state, control)
    assert int(np.sum(state.contacts.active)) == 1      # the foot, nothing else
    sweeps.append(int(state.solver_iterations))
    impulses.append(np.asarray(state.contacts.impulse[0], np.float64))
  return np.array(sweeps), np.array(impulses)


def test_float32_hopper_foot_converges_to_the_float64_solution():
  sweeps, impulses = _foot_impulses("float32")
  with jax.enable_x64(True):
    _, reference = _foot_impulses("float64")
  assert sweeps.max() <= 5, sweeps
  # Float32's own accuracy on this contact: ~1e-4 of the impulse (the drift left 5e-3).
  error = np.abs(impulses - reference).max(axis=1) / np.abs(reference).max(axis=1)
  assert error.max() < 1e-3, error
