"""raisim_jax.math.dense (the SPD inverse, 3x3 symmetric eigen) against numpy's LAPACK, and
the reason it exists: a step compiles without LAPACK custom calls, so two robots at a large
batch no longer hang XLA's CPU thread pool."""

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
from raisim_jax.math import dense, rotation

RSC = os.path.join(os.path.dirname(__file__), "..", "rsc", "urdf")


def _spd(rng, n, batch=()):
  a = rng.normal(size=batch + (n, n))
  return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 3, 14, 18, 40])
def test_inverse_solves_like_lapack(n):
  rng = np.random.default_rng(n)
  a = _spd(rng, n, (4,))
  rhs = rng.normal(size=(4, n, 5))
  np.testing.assert_allclose(dense.spd_inverse(jnp.asarray(a)) @ rhs, np.linalg.solve(a, rhs),
                             rtol=1e-10, atol=1e-12)


def test_inverse_of_ill_conditioned_mass_matrices_in_float32():
  """Gymnasium's humanoid's mass matrix (nv 23) in poses across its joint ranges, plus the
  step's implicit-damping diagonal, inverted in float32: within a small multiple of float32's
  rounding times the condition number of numpy's float64 inverse."""
  import warnings
  from raisim_jax.dynamics import crba, kinematics
  from tests.test_mjcf import ASSETS
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # MJCF features the reader maps approximately
    world = rj.World(os.path.join(ASSETS, "humanoid.xml"), dtype=jnp.float32)
  model, state = world.compile()
  system, start = model.articulated[0], state.articulated[0]
  rng = np.random.default_rng(0)
  masses = []
  for _ in range(32):
    gc = np.asarray(start.generalized_coordinate, np.float32).copy()
    gc[7:] += rng.normal(scale=0.7, size=gc.shape[0] - 7).astype(np.float32)
    kin = kinematics.forward_kinematics(system, jnp.asarray(gc),
                                        jnp.zeros(system.num_gv, jnp.float32))
    masses.append(np.asarray(crba.mass_matrix_from_kinematics(system, kin), np.float64)
                  + np.diag(rng.uniform(0.0, 0.01, system.num_gv)))
  masses = np.stack(masses)
  exact = np.linalg.inv(masses)
  inverse = np.asarray(jax.jit(dense.spd_inverse)(jnp.asarray(masses, jnp.float32)))
  relative = np.abs(inverse - exact).max(axis=(1, 2)) / np.abs(exact).max(axis=(1, 2))
  condition = np.linalg.cond(masses)
  assert condition.max() > 1e3          # the poses reach ill-conditioned matrices
  assert np.all(relative <= 4 * np.finfo(np.float32).eps * condition), relative / condition


def test_inverse_gradient_matches_lapack_path():
  """d/dA of a loss through our inverse equals it through jax.scipy's Cholesky (LAPACK)."""
  rng = np.random.default_rng(3)
  a, rhs = jnp.asarray(_spd(rng, 7)), jnp.asarray(rng.normal(size=(7, 2)))

  def ours(a):
    return jnp.sum(jnp.sin(dense.spd_inverse(a) @ rhs))

  def lapack(a):
    factor = jnp.linalg.cholesky(a)
    return jnp.sum(jnp.sin(jax.scipy.linalg.cho_solve((factor, True), rhs)))

  np.testing.assert_allclose(jax.grad(ours)(a), jax.grad(lapack)(a), rtol=1e-9, atol=1e-12)


def test_inverse_of_an_indefinite_matrix_is_nan_like_a_failed_cholesky():
  """A non-positive pivot (an indefinite or singular `a`, as a broken mass matrix would be)
  gives NaN, where LAPACK's Cholesky factorization fails, not a finite wrong inverse."""
  assert np.isnan(np.asarray(dense.spd_inverse(jnp.asarray([[1.0, 2.0], [2.0, 1.0]])))).all()
  assert np.isnan(np.asarray(dense.spd_inverse(jnp.asarray([[1.0, 1.0], [1.0, 1.0]])))).all()


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


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_symmetric_eigen3_has_finite_gradients_on_degenerate_blocks(dtype):
  def loss(b):
    values, vectors = dense.symmetric_eigen3(b)
    return jnp.sum(values * jnp.arange(1.0, 4.0, dtype=dtype)) + jnp.sum(vectors[..., 0, :])

  tiny = np.diag([1.0, 2.0, 3.0])
  tiny[0, 1] = tiny[1, 0] = 1e-30     # a_pq whose square underflows in float32
  for block in _degenerate_blocks() + [tiny]:
    assert np.isfinite(np.asarray(jax.grad(loss)(jnp.asarray(block, dtype)))).all()


def test_eigenvalue_derivative_off_a_diagonal_block():
  """d lambda / d a_01 of diag(1, 2, 3) is 0 and the eigenvector turns by a_01 / (1 - 2):
  the rotation's derivative at an exactly zero off-diagonal entry."""
  e01 = jnp.zeros((3, 3)).at[0, 1].set(1.0).at[1, 0].set(1.0)
  _, (d_values, d_vectors) = jax.jvp(dense.symmetric_eigen3, (jnp.diag(jnp.arange(1.0, 4.0)),),
                                     (e01,))
  np.testing.assert_allclose(d_values, 0.0, atol=1e-12)
  # First-order perturbation: dv_0 = sum_k e_k (e_k^T dA e_0) / (lambda_0 - lambda_k).
  np.testing.assert_allclose(np.abs(d_vectors[1, 0]), 1.0, atol=1e-12)


@pytest.mark.parametrize("block", [np.eye(3), 2.0 * np.eye(3), np.diag([1.0, 2.0, 3.0]),
                                   np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0],
                                             [0.0, -1.0, 2.0]])])
def test_pseudo_inverse_derivative_of_a_full_rank_block(block):
  """d(A^-1) = -A^-1 dA A^-1 along a symmetric direction, repeated eigenvalues included."""
  direction = np.random.default_rng(5).normal(size=(3, 3))
  direction = direction + direction.T
  _, tangent = jax.jvp(lambda b: contact_dynamics._pseudo_inverse(b[None])[0],
                       (jnp.asarray(block),), (jnp.asarray(direction),))
  inverse = np.linalg.inv(block)
  np.testing.assert_allclose(tangent, -inverse @ direction @ inverse, rtol=1e-9, atol=1e-12)


def test_pseudo_inverse_derivative_of_a_rank_deficient_block_matches_finite_differences():
  """A = B B^T with B (3, 2) keeps rank 2 along dB: jvp against numpy pinv differences."""
  rng = np.random.default_rng(8)
  b, db = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))

  def ours(b):
    return contact_dynamics._pseudo_inverse((b @ b.T)[None])[0]

  _, tangent = jax.jvp(ours, (jnp.asarray(b),), (jnp.asarray(db),))
  h = 1e-6
  pinv = lambda x: np.linalg.pinv(x @ x.T, rcond=1e-9, hermitian=True)
  expected = (pinv(b + h * db) - pinv(b - h * db)) / (2 * h)
  np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-7)


def test_zero_dimensional_matrices_pass_through():
  """A robot without moving joints has a 0 x 0 M_eff."""
  empty = jnp.zeros((0, 0))
  assert dense.spd_inverse(empty).shape == (0, 0)


def _two_robot_world(dtype=jnp.float64):
  world = rj.World(dtype=dtype)
  world.setTimeStep(2e-3)
  world.addGround()
  world.addArticulatedSystem(os.path.join(RSC, "all_joints.urdf"))
  world.addArticulatedSystem(os.path.join(RSC, "fixed_arm.urdf"))
  return world


def _pinned_world():
  world = rj.World()
  world.addGround()
  world.addArticulatedSystem(os.path.join(RSC, "fourbar.urdf"))
  return world


@pytest.mark.parametrize("build", [_two_robot_world, _pinned_world])
def test_a_step_compiles_without_lapack_calls(build):
  """The CPU executable of a batched step (two different robots; a closed loop, whose pin
  rows take a pseudo-inverse) calls no LAPACK kernel (jaxlib's kernels block XLA's pool
  threads: see raisim_jax/math/dense.py)."""
  model, state = build().compile()
  step = jax.jit(jax.vmap(lambda s: rj.step(model, s)))
  text = step.lower(rj.batching.replicate(state, 4)).compile().as_text()
  targets = set(re.findall(r'custom_call_target="([^"]+)"', text))
  assert not {t for t in targets if "lapack" in t.lower()}, targets


_PREAMBLE = textwrap.dedent("""
    import os, sys, warnings
    import jax
    import jax.numpy as jnp
    import raisim_jax as rj
    sys.path.insert(0, os.path.dirname({test!r}))
""")

# Each scene with the steps it runs at batch 1,024 (unoptimized, as the test compiles: the two
# robots' 50 steps took 132 s, 10 steps 28 s, 2026-12-04).
_BATCHED_RUNS = {
    # Every step factorizes both robots' mass matrices: the hang came on the first.
    "two robots": ("""
from test_dense_linalg import _two_robot_world
world = _two_robot_world(jnp.float32)
""", 10),
    # The configuration that hung with the contact rows in chunks under a cond (stop 30): 50
    # steps of 10 ms, so that the ant (its torso 0.75 m up) lands and has contact rows.
    "gymnasium ant": ("""
import gymnasium
path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")
with warnings.catch_warnings():
  warnings.simplefilter("ignore")
  world = rj.World(path, dtype=jnp.float32)
world.setContactSolverDifferentiable(False)
""", 50),
}

_ROLLOUT = """
model, state = world.compile()
run = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, {steps})[0]))
out = run(rj.batching.replicate(state, 1024))
jax.block_until_ready(out)
print("stepped", int(jnp.max(jnp.sum(out.contacts.active, axis=-1))))
"""


@pytest.mark.parametrize("scene", sorted(_BATCHED_RUNS))
def test_batch_1024_runs_do_not_hang(scene):
  """Regression: with jnp.linalg's Cholesky, two robots at batch 1,024 hung inside XLA on a
  2-core machine (two factorizations at once, every pool thread waiting on the other's
  work); so did the ant once its contact rows ran in chunks under a cond."""
  setup, steps = _BATCHED_RUNS[scene]
  script = (_PREAMBLE.format(test=os.path.abspath(__file__)) + setup
            + _ROLLOUT.format(steps=steps))
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
  assert result.returncode == 0, result.stderr[-2000:]
  assert "stepped" in result.stdout
  if scene == "gymnasium ant":       # landed: the contact rows ran
    assert int(result.stdout.split("stepped", 1)[1].split()[0]) > 0, result.stdout


@pytest.mark.parametrize("n", [1, 6, 18])
def test_spd_inverse_matches_numpy_and_is_symmetric(n):
  a = _spd(np.random.default_rng(20 + n), n, (3,))
  inverse = np.asarray(dense.spd_inverse(jnp.asarray(a)))
  np.testing.assert_allclose(inverse, np.linalg.inv(a), rtol=1e-10, atol=1e-13)
  np.testing.assert_array_equal(inverse, np.swapaxes(inverse, -1, -2))


@pytest.mark.parametrize("m, k, n", [(3, 3, 3), (3, 3, 18), (3, 18, 3), (1, 1, 1)])
def test_unrolled_products_match_numpy(m, k, n):
  rng = np.random.default_rng(m * 100 + k * 10 + n)
  a, b, v = rng.normal(size=(5, m, k)), rng.normal(size=(5, k, n)), rng.normal(size=(5, k))
  np.testing.assert_allclose(np.asarray(dense.unrolled_matmul(jnp.asarray(a), jnp.asarray(b))),
                             a @ b, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(np.asarray(dense.unrolled_matvec(jnp.asarray(a), jnp.asarray(v))),
                             np.einsum("bmk,bk->bm", a, v), rtol=1e-12, atol=1e-12)


def test_unrolled_matmul_stays_out_of_xla_dots():
  """The reason the helper exists: XLA:CPU would hand a dot of small matrices to its library
  kernel, one tiny matrix at a time (dense.unrolled_matmul); the unrolled form compiles to
  elementwise fusions only."""
  a, b = jnp.ones((1024, 3, 3), jnp.float32), jnp.ones((1024, 3, 18), jnp.float32)
  text = jax.jit(dense.unrolled_matmul).lower(a, b).compile().as_text()
  assert not re.search(r"\bdot\(|ynn|custom-call", text), text


def test_rotate_inertia_matches_numpy_and_stays_out_of_xla_dots():
  """R I R^T, the one world-frame inertia of single bodies and articulated links alike."""
  rng = np.random.default_rng(7)
  rot = np.linalg.qr(rng.normal(size=(6, 3, 3)))[0]
  inertia = rng.normal(size=(6, 3, 3))
  inertia = inertia @ np.swapaxes(inertia, -1, -2)
  np.testing.assert_allclose(
      np.asarray(rotation.rotate_inertia(jnp.asarray(rot), jnp.asarray(inertia))),
      rot @ inertia @ np.swapaxes(rot, -1, -2), rtol=1e-12, atol=1e-12)
  ones = jnp.ones((1024, 3, 3), jnp.float32)
  text = jax.jit(rotation.rotate_inertia).lower(ones, ones).compile().as_text()
  assert not re.search(r"\bdot\(|ynn|custom-call", text), text


def test_stepping_a_float64_world_outside_64_bit_mode_names_the_fix():
  """A float64 (model, state) stepped after leaving x64 mode raised a scan carry dtype
  mismatch deep inside rollout; it now says what to do."""
  model, state = _two_robot_world().compile()
  with jax.enable_x64(False):
    for run in (lambda: rj.step(model, state), lambda: rj.rollout(model, state, 2)):
      with pytest.raises(ValueError, match="64-bit mode"):
        run()


def test_a_robot_without_moving_joints_steps():
  """Found by the URDF fuzzer: one link fixed to the world (nv = 0) failed in jnp.stack."""
  text = ('<robot name="welded"><link name="world"/><joint name="base" type="fixed">'
          '<parent link="world"/><child link="l0"/><origin xyz="0 0 1"/></joint>'
          '<link name="l0"><collision><geometry><sphere radius="1"/></geometry></collision>'
          '</link></robot>')
  world = rj.World()
  world.addGround()
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(3.0, 0.0, 0.5)
  robot = world.addArticulatedSystem(text)
  assert robot.getDOF() == 0
  for _ in range(5):
    world.integrate()
  assert np.isfinite(ball.getPosition()).all()
  # Semi-implicit Euler free fall (the ball is far from the robot and the ground).
  dt, g = world.getTimeStep(), 9.81
  np.testing.assert_allclose(ball.getPosition()[2], 0.5 - g * dt * dt * 5 * 6 / 2, atol=1e-9)


def _robot_system(name):
  """(ArticulatedModel, start ArticulatedState) of `name`: Gymnasium's humanoid, or an rsc
  URDF (the quadruped: floating base and legs; fixed_arm: a chain; all_joints: a tree with
  every joint type)."""
  import warnings
  from tests.test_mjcf import ASSETS
  if name == "humanoid":
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")   # MJCF features the reader maps approximately
      world = rj.World(os.path.join(ASSETS, "humanoid.xml"))
  else:
    world = rj.World()
    world.addArticulatedSystem(os.path.join(RSC, f"{name}.urdf"))
  model, state = world.compile()
  return model.articulated[0], state.articulated[0]


@pytest.mark.parametrize("name", ["humanoid", "quadruped", "fixed_arm", "all_joints"])
def test_tree_levels_eliminate_independent_dofs_and_invert_mass_matrices(name):
  """`tree.elimination_levels` against the support relation of the mass matrix's dofs
  (`tree.dof_support`): every dof once; no dof supports another of its level (so M is zero
  between them); every dof a dof supports is eliminated at an earlier level. Then
  `spd_inverse(M + D, levels)` of the robot's M at random poses against numpy's inverse
  (float64), and its float32 inverse as close to it as the one-pivot-at-a-time order's."""
  from raisim_jax.dynamics import articulated_integrate, crba, kinematics, tree
  system, start = _robot_system(name)
  levels = tree.elimination_levels(system.parent, system.dof_body)
  nv = system.num_gv
  assert sorted(a for level in levels for a in level) == list(range(nv))
  support = tree.dof_support(system.parent, system.dof_body)   # [body, dof]
  body = np.asarray(system.dof_body)
  # dof a supports dof b: b's body is moved by a, and a comes first within a shared body.
  supports = (support[body, :].T > 0) & ((body[:, None] != body[None, :])
                                         | (np.arange(nv)[:, None] < np.arange(nv)[None, :]))
  level_of = np.empty(nv, int)
  for k, level in enumerate(levels):
    level_of[list(level)] = k
  for a in range(nv):
    for b in range(nv):
      if supports[a, b]:
        assert level_of[b] < level_of[a], (a, b)
  if name == "quadruped":
    assert nv == 18 and len(levels) == 9
  if name == "fixed_arm":
    assert len(levels) == nv          # a chain: nothing to do at once
  rng = np.random.default_rng(len(name))
  masses = []
  for _ in range(8):      # random poses: the start pose moved by a random velocity for 1 s
    move = jnp.asarray(rng.normal(scale=0.5, size=nv))
    gc = articulated_integrate.update_configuration(system, start.generalized_coordinate,
                                                    move, move, 1.0)
    kin = kinematics.forward_kinematics(system, gc, jnp.zeros(nv))
    mass = np.asarray(crba.mass_matrix_from_kinematics(system, kin))
    masses.append(mass + np.diag(rng.uniform(0.0, 0.01, nv)))
  masses = np.stack(masses)
  exact = np.linalg.inv(masses)
  np.testing.assert_allclose(np.asarray(dense.spd_inverse(jnp.asarray(masses), levels)), exact,
                             rtol=1e-9, atol=1e-12 * np.abs(exact).max())
  in_float32 = jnp.asarray(masses, jnp.float32)
  error = lambda x: np.abs(np.asarray(x, np.float64) - exact).max()
  assert error(dense.spd_inverse(in_float32, levels)) <= 2 * error(dense.spd_inverse(in_float32))
