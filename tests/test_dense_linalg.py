"""raisim_jax.math.dense (Cholesky, triangular solves, 3x3 symmetric eigen) against numpy's
LAPACK, and the reason it exists: a step compiles without LAPACK custom calls, so two robots
at a large batch no longer hang XLA's CPU thread pool."""

import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.dynamics import contact_dynamics
from raisim_jax.math import dense

RSC = os.path.join(os.path.dirname(__file__), "..", "rsc", "urdf")


def _spd(rng, n, batch=()):
  a = rng.normal(size=batch + (n, n))
  return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 3, 14, 18, 40])
def test_cholesky_and_cho_solve_match_lapack(n):
  rng = np.random.default_rng(n)
  a = _spd(rng, n, (4,))
  factor = np.asarray(dense.cholesky(jnp.asarray(a)))
  np.testing.assert_allclose(factor, np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
  rhs = rng.normal(size=(4, n, 5))
  np.testing.assert_allclose(dense.cho_solve(jnp.asarray(factor), jnp.asarray(rhs)),
                             np.linalg.solve(a, rhs), rtol=1e-10, atol=1e-12)
  vector = rhs[..., 0]
  np.testing.assert_allclose(dense.cho_solve(jnp.asarray(factor), jnp.asarray(vector)),
                             np.linalg.solve(a, vector[..., None])[..., 0], rtol=1e-10,
                             atol=1e-12)


def test_triangular_solves_match_numpy():
  rng = np.random.default_rng(7)
  lower = np.tril(rng.normal(size=(6, 6))) + 4 * np.eye(6)
  rhs = rng.normal(size=(6, 3))
  np.testing.assert_allclose(dense.solve_lower(jnp.asarray(lower), jnp.asarray(rhs)),
                             np.linalg.solve(lower, rhs), rtol=1e-12)
  np.testing.assert_allclose(dense.solve_upper_transposed(jnp.asarray(lower), jnp.asarray(rhs)),
                             np.linalg.solve(lower.T, rhs), rtol=1e-12)


def test_cho_solve_gradient_matches_lapack_path():
  """d/dA of a loss through our factor and solve equals it through jax.scipy's (LAPACK)."""
  rng = np.random.default_rng(3)
  a, rhs = jnp.asarray(_spd(rng, 7)), jnp.asarray(rng.normal(size=(7, 2)))

  def ours(a):
    return jnp.sum(jnp.sin(dense.cho_solve(dense.cholesky(a), rhs)))

  def lapack(a):
    factor = jnp.linalg.cholesky(a)
    return jnp.sum(jnp.sin(jax.scipy.linalg.cho_solve((factor, True), rhs)))

  np.testing.assert_allclose(jax.grad(ours)(a), jax.grad(lapack)(a), rtol=1e-9, atol=1e-12)


def test_cholesky_of_an_indefinite_matrix_is_nan_like_lapack():
  assert np.isnan(np.asarray(dense.cholesky(jnp.asarray([[1.0, 2.0], [2.0, 1.0]])))).any()


def _degenerate_blocks():
  """Symmetric PSD 3x3 blocks that trip eigen-solvers: repeated and zero eigenvalues,
  exactly aligned axes, rank 1 and 2, large spread."""
  u = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
  w = np.cross(u, [0.0, 0.0, 1.0])
  w /= np.linalg.norm(w)
  return [np.eye(3), np.zeros((3, 3)), np.diag([1.0, 1.0, 2.0]), np.diag([0.0, 3.0, 3.0]),
          np.outer(u, u), np.outer(u, u) + np.outer(w, w), np.diag([1e-8, 1.0, 1e6]),
          np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]),
          np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])]


@pytest.mark.parametrize("dtype,tolerance", [(jnp.float64, 1e-12), (jnp.float32, 2e-6)])
def test_symmetric_eigen3_matches_eigh(dtype, tolerance):
  rng = np.random.default_rng(11)
  random = [m @ m.T for m in rng.normal(size=(20, 3, 3))]
  blocks = np.stack(_degenerate_blocks() + random)
  values, vectors = dense.symmetric_eigen3(jnp.asarray(blocks, dtype))
  values, vectors = np.asarray(values, np.float64), np.asarray(vectors, np.float64)
  expected = np.linalg.eigvalsh(blocks)
  scale = np.maximum(np.abs(expected[:, -1:]), 1.0)
  np.testing.assert_allclose(values / scale, expected / scale, atol=tolerance)
  # Orthonormal vectors that diagonalize the block (unique up to sign / repeated subspaces).
  np.testing.assert_allclose(np.swapaxes(vectors, 1, 2) @ vectors,
                             np.broadcast_to(np.eye(3), blocks.shape), atol=10 * tolerance)
  reconstructed = np.einsum("rij,rj,rkj->rik", vectors, values, vectors)
  np.testing.assert_allclose(reconstructed / scale[:, :, None], blocks / scale[:, :, None],
                             atol=10 * tolerance)


def test_pin_pseudo_inverse_matches_numpy_pinv():
  blocks = np.stack(_degenerate_blocks()[:-1])
  ours = np.asarray(contact_dynamics._pseudo_inverse(jnp.asarray(blocks)))
  expected = np.stack([np.linalg.pinv(b, rcond=1e-9, hermitian=True) for b in blocks])
  np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-9)


def test_symmetric_eigen3_has_finite_gradients_on_degenerate_blocks():
  def loss(b):
    values, vectors = dense.symmetric_eigen3(b)
    return jnp.sum(values ** 2) + jnp.sum(vectors[..., 0] ** 2)

  for block in _degenerate_blocks():
    assert np.isfinite(np.asarray(jax.grad(loss)(jnp.asarray(block)))).all()


def _two_robot_world(dtype=jnp.float64):
  world = rj.World(dtype=dtype)
  world.setTimeStep(2e-3)
  world.addGround()
  world.addArticulatedSystem(os.path.join(RSC, "all_joints.urdf"))
  world.addArticulatedSystem(os.path.join(RSC, "fixed_arm.urdf"))
  return world


def test_a_step_compiles_without_lapack_calls():
  """The CPU executable of a batched step of two different robots calls no LAPACK kernel
  (jaxlib's kernels block XLA's pool threads: see raisim_jax/math/dense.py)."""
  model, state = _two_robot_world().compile()
  step = jax.jit(jax.vmap(lambda s: rj.step(model, s)))
  text = step.lower(rj.batching.replicate(state, 4)).compile().as_text()
  targets = set(re.findall(r'custom_call_target="([^"]+)"', text))
  assert not {t for t in targets if "lapack" in t.lower()}, targets


_BATCHED_TWO_ROBOTS = textwrap.dedent("""
    import os, sys
    import jax
    import jax.numpy as jnp
    import raisim_jax as rj
    sys.path.insert(0, os.path.dirname({test!r}))
    from test_dense_linalg import _two_robot_world
    model, state = _two_robot_world(jnp.float32).compile()
    states = rj.batching.replicate(state, 1024)
    run = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, 5)[0]))
    run(states).articulated[0].generalized_coordinate.block_until_ready()
    print("stepped")
""")


def test_two_robots_at_batch_1024_do_not_hang():
  """Regression: with jnp.linalg's Cholesky this program hung inside XLA on a 2-core machine
  (two robots' factorizations at once, every pool thread waiting on the other's work)."""
  script = _BATCHED_TWO_ROBOTS.format(test=os.path.abspath(__file__))
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
  assert result.returncode == 0, result.stderr[-2000:]
  assert "stepped" in result.stdout
