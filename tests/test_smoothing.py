"""The opt-in smoothed contact gradient (raisim_jax/smoothing.py) across bounce mode changes.

Oracle: the Gaussian smoothing of the final height, computed by quadrature on a dense grid
(no sampling), differentiated by central differences.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.smoothing import smoothed_value_and_grad

SIGMA = 0.05      # m/s; the bounce step switches every ~0.01 m/s of initial velocity
QUADRATURE_POINTS = 1001   # width of the one jit(vmap(f)) program every plain evaluation uses


def _final_height_of_a_bouncing_ball():
  """z after 0.7 s of a ball dropped from 1 m (restitution 0.8): one bounce at ~0.43 s."""
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  world.addSphere(0.1, 1.0).setPosition(0, 0, 1.0)
  world.setDefaultMaterial(0.8, 0.8, 0.0)
  model, state = world.compile()

  def final_height(vz0):
    start = rj.tree_replace(state, {
        "bodies.linear_velocity": state.bodies.linear_velocity.at[1, 2].set(vz0)})
    final = jax.lax.fori_loop(0, 700, lambda _, s: rj.step(model, s), start)
    return final.bodies.position[1, 2]

  return final_height


def _smoothed_by_quadrature(f_batched, x):
  """The smoothing of f at x by quadrature; `f_batched` is jit(vmap(f)), made once by the
  caller so that every call reuses one traced program."""
  eps = np.linspace(-5.0, 5.0, QUADRATURE_POINTS)
  weights = np.exp(-0.5 * eps**2)
  weights /= weights.sum()
  values = np.asarray(f_batched(jnp.asarray(x + SIGMA * eps)))
  return float(np.sum(weights * values))


@pytest.mark.xla_optimized
def test_smoothed_gradient_tracks_the_slope_over_mode_changes_where_the_plain_one_does_not():
  with jax.enable_x64(True):
    f = _final_height_of_a_bouncing_ball()
    f_batched = jax.jit(jax.vmap(f))      # one program for every plain evaluation below
    x = 0.0
    plain = float(jax.jit(jax.grad(f))(x))
    h = 0.5 * SIGMA
    smoothed_slope = (_smoothed_by_quadrature(f_batched, x + h)
                      - _smoothed_by_quadrature(f_batched, x - h)) / (2 * h)
    # Central differences, coarse and tiny, from one call of the same program (padded).
    arguments = np.zeros(QUADRATURE_POINTS)
    arguments[:4] = [x + 0.05, x - 0.05, x + 1e-6, x - 1e-6]
    values = np.asarray(f_batched(jnp.asarray(arguments)))
    coarse_slope = float((values[0] - values[1]) / 0.1)
    # The plain gradient is the within-mode slope: right for tiny steps, wrong sign for any
    # step that moves the bounce by a time step.
    fd_tiny = float((values[2] - values[3]) / 2e-6)
    assert plain == pytest.approx(fd_tiny, rel=1e-6)
    assert plain > 0.1 and smoothed_slope < -0.05 and coarse_slope < -0.05

    key = jax.random.PRNGKey(0)
    zeroth = smoothed_value_and_grad(f, SIGMA, 2048)
    value, gradient = jax.jit(zeroth)(x, key)
    assert float(gradient) == pytest.approx(smoothed_slope, rel=0.1)
    assert float(value) == pytest.approx(_smoothed_by_quadrature(f_batched, x), abs=2e-3)
    # The first-order estimator averages plain gradients: it misses the jumps (its bias).
    first = smoothed_value_and_grad(f, SIGMA, 64, estimator="first")
    _, first_gradient = jax.jit(first)(x, key)
    assert float(first_gradient) > 0.1


def test_smoothed_gradient_of_a_smooth_pytree_function_equals_the_plain_gradient():
  """For a quadratic, grad f_sigma = grad f exactly; antithetic pairs cancel the constant."""
  def f(params):
    return jnp.sum(params["a"] ** 2) + 3.0 * params["b"]

  params = {"a": jnp.array([1.0, -2.0]), "b": jnp.array(0.5)}
  _, gradient = smoothed_value_and_grad(f, 0.1, 20000)(params, jax.random.PRNGKey(1))
  np.testing.assert_allclose(gradient["a"], [2.0, -4.0], rtol=0.05)
  np.testing.assert_allclose(gradient["b"], 3.0, rtol=0.02)
  _, first = smoothed_value_and_grad(f, 0.1, 256, estimator="first")(params,
                                                                     jax.random.PRNGKey(1))
  np.testing.assert_allclose(first["b"], 3.0, rtol=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sigma=0.0, num_samples=4), "sigma"),
    (dict(sigma=float("nan"), num_samples=4), "sigma"),
    (dict(sigma=0.1, num_samples=0), "num_samples"),
    (dict(sigma=0.1, num_samples=4, estimator="second"), "estimator"),
])
def test_bad_smoothing_arguments_are_named(kwargs, message):
  with pytest.raises(ValueError, match=message):
    smoothed_value_and_grad(lambda x: x, **kwargs)
