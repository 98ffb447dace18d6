"""The exact local 3-D solve against closed forms, the NCP conditions and a brute-force oracle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from raisim_jax.dynamics import contact_solver as cs

G_DT = 9.81 * 0.001


def random_block(rng, dofs=6):
  """A physically shaped G_ii = J M^-1 J^T: random J (3, dofs), inverse masses in [0.2, 3]."""
  J = rng.normal(size=(3, dofs))
  inv_mass = rng.uniform(0.2, 3.0, dofs)
  return (J * inv_mass) @ J.T


def test_ball_resting():
  G = np.diag([2.0, 2.0, 1.0]) * 1.0
  lam = cs.solve_single_contact(jnp.asarray(G), jnp.array([0.0, 0.0, -G_DT]), 0.8, 0.0)
  np.testing.assert_allclose(lam, [0.0, 0.0, G_DT / G[2, 2]], atol=1e-15)


def test_open_contact_gives_zero():
  lam = cs.solve_single_contact(jnp.eye(3), jnp.array([0.3, -1.0, 0.2]), 0.8, 0.0)
  assert np.all(np.asarray(lam) == 0.0)
  assert int(cs.single_contact_mode(jnp.eye(3), jnp.array([0.3, -1.0, 0.2]), 0.8, 0.0)) == cs.MODE_OPEN


def test_sticking_zeroes_relative_velocity():
  G = random_block(np.random.default_rng(1))
  c = np.array([0.01, -0.02, -1.0])
  lam = np.asarray(cs.solve_single_contact(jnp.asarray(G), jnp.asarray(c), 1.0, 0.0))
  assert int(cs.single_contact_mode(G, c, 1.0, 0.0)) == cs.MODE_STICK
  np.testing.assert_allclose(G @ lam + c, 0.0, atol=1e-12)
  assert np.linalg.norm(lam[:2]) < lam[2]


def test_sliding_block_isotropic():
  """Block of mass m sliding at speed u: G = I/m; impulse mu m g dt opposing motion."""
  m, mu, u = 2.0, 0.5, np.array([1.0, 0.5])
  c = np.array([u[0], u[1], -G_DT])
  lam = np.asarray(cs.solve_single_contact(jnp.eye(3) / m, jnp.asarray(c), mu, 0.0))
  normal = m * G_DT
  expected_t = -mu * normal * u / np.linalg.norm(u)
  np.testing.assert_allclose(lam, [*expected_t, normal], atol=1e-13)
  v = lam / m + c
  np.testing.assert_allclose(v[:2], u - mu * G_DT * u / np.linalg.norm(u), atol=1e-13)
  assert abs(v[2]) < 1e-15


def test_target_normal_velocity_respected():
  G = random_block(np.random.default_rng(2))
  for c, mu in [(np.array([0.0, 0.0, -1.0]), 1.0), (np.array([2.0, -1.0, -1.0]), 0.3)]:
    lam = np.asarray(cs.solve_single_contact(jnp.asarray(G), jnp.asarray(c), mu, 0.7))
    assert abs((G @ lam + c)[2] - 0.7) < 1e-12
  # Separating faster than the target: open.
  lam = cs.solve_single_contact(jnp.asarray(G), jnp.array([0.0, 0.0, 0.8]), 1.0, 0.7)
  assert np.all(np.asarray(lam) == 0.0)


def test_frictionless_slide():
  G = random_block(np.random.default_rng(3))
  c = np.array([1.0, 2.0, -1.0])
  lam = np.asarray(cs.solve_single_contact(jnp.asarray(G), jnp.asarray(c), 0.0, 0.0))
  np.testing.assert_allclose(lam, [0.0, 0.0, 1.0 / G[2, 2]], rtol=1e-12)


def _oracle_slide(G, c, mu, target):
  """Brute force: all roots of the slide equation on a fine angle grid + scipy refinement."""
  b = c - np.array([0.0, 0.0, target])

  def lam_of(theta):
    w = np.array([mu * np.cos(theta), mu * np.sin(theta), 1.0])
    return -b[2] / (G[2] @ w) * w

  def f(theta):
    lam = lam_of(theta)
    v = G @ lam + b
    return -np.sin(theta) * v[0] + np.cos(theta) * v[1]

  thetas = np.linspace(0, 2 * np.pi, 4001)
  values = np.array([f(t) for t in thetas])
  sols = []
  for k in np.nonzero(values[:-1] * values[1:] <= 0)[0]:
    t = minimize_scalar(lambda t: f(t) ** 2, bounds=(thetas[k], thetas[k + 1]),
                        method='bounded', options={'xatol': 1e-14}).x
    lam = lam_of(t)
    v = G @ lam + b
    if lam[2] > 0 and v[:2] @ lam[:2] < 0:
      sols.append(lam)
  return sols


@pytest.mark.parametrize('dtype_tol', [1e-9])
def test_random_local_problems_satisfy_ncp_and_match_oracle(dtype_tol):
  rng = np.random.default_rng(0)
  T = 2000
  Gs = np.stack([random_block(rng) for _ in range(T)])
  cs_ = rng.normal(size=(T, 3))
  mus = rng.uniform(0.0, 1.2, T)
  targets = np.where(rng.uniform(size=T) < 0.3, rng.uniform(0, 0.5, T), 0.0)
  fn = jax.jit(jax.vmap(lambda G, c, m, t: (cs.solve_single_contact(G, c, m, t),
                                            cs.single_contact_mode(G, c, m, t))))
  lams, modes = map(np.asarray, fn(Gs, cs_, mus, targets))
  assert set(np.unique(modes)) == {0, 1, 2}
  checked_oracle = 0
  for G, c, mu, t, lam, mode in zip(Gs, cs_, mus, targets, lams, modes):
    v = G @ lam + c
    scale = 1.0 + np.abs(lam).max()
    assert lam[2] >= 0
    assert v[2] >= t - dtype_tol
    assert abs(lam[2] * (v[2] - t)) < dtype_tol * scale
    assert np.linalg.norm(lam[:2]) <= mu * lam[2] + dtype_tol * scale
    if mode == cs.MODE_STICK:
      assert np.abs(v[:2]).max() < dtype_tol
    if mode == cs.MODE_SLIDE:
      assert abs(np.linalg.norm(lam[:2]) - mu * lam[2]) < dtype_tol * scale
      # maximum dissipation: v_t anti-parallel to lambda_t
      assert abs(v[0] * lam[1] - v[1] * lam[0]) < dtype_tol * scale
      assert v[:2] @ lam[:2] <= dtype_tol
      if checked_oracle < 40:
        sols = _oracle_slide(G, c, mu, t)
        assert any(np.abs(s - lam).max() < 1e-8 * scale for s in sols)
        checked_oracle += 1
    if mode == cs.MODE_SLIDE and mu > 0:
      # The stick candidate must really be outside the cone.
      l0 = -np.linalg.solve(G, c - [0, 0, t])
      assert np.linalg.norm(l0[:2]) > mu * l0[2]
  assert checked_oracle == 40


def test_float32_local_solve():
  rng = np.random.default_rng(5)
  G = random_block(rng).astype(np.float32)
  c = np.array([1.0, -0.5, -0.3], np.float32)
  lam = np.asarray(cs.solve_single_contact(jnp.asarray(G), jnp.asarray(c), np.float32(0.6),
                                           np.float32(0.0)))
  assert lam.dtype == np.float32
  v = G.astype(np.float64) @ lam + c
  assert abs(v[2]) < 1e-5
  assert abs(np.linalg.norm(lam[:2]) - 0.6 * lam[2]) < 1e-5 * (1 + lam[2])
  assert abs(v[0] * lam[1] - v[1] * lam[0]) < 1e-5


def test_static_friction_and_bounce_helpers():
  mu = cs.static_friction_coefficient(0.5, 0.9, 0.1, jnp.array([0.0, 0.05, 0.1, 1.0]))
  np.testing.assert_allclose(mu, [0.9, 0.7, 0.5, 0.5])
  np.testing.assert_allclose(cs.static_friction_coefficient(0.5, 0.9, 0.0, 0.0), 0.5)
  np.testing.assert_allclose(cs.bounce_velocity(0.8, 0.1, jnp.array([-1.0, 0.05, 1.1])),
                             [0.0, 0.0, 0.8])
  g = jax.grad(lambda s: cs.static_friction_coefficient(0.5, 0.9, 0.0, s))(0.0)
  assert np.isfinite(g)


def test_single_contact_slide_jvp_matches_finite_differences():
  """The custom JVP in slide mode (implicit function theorem on the cone-boundary equations)
  matches central differences w.r.t. each of G_ii, c', mu and the target."""
  rng = np.random.default_rng(4)
  G = random_block(rng)
  c = np.array([1.5, -0.7, -0.8])
  args = (G, c, 0.4, 0.1)
  assert int(cs.single_contact_mode(*args)) == cs.MODE_SLIDE
  solve = jax.jit(cs.solve_single_contact)
  for argnum in range(4):
    jac = jax.jit(jax.jacfwd(cs.solve_single_contact, argnums=argnum))(*map(jnp.asarray, args))
    x = np.asarray(args[argnum], float)
    d = rng.normal(size=x.shape)
    eps = 1e-6

    def at(xx):
      a = list(args)
      a[argnum] = xx
      return np.asarray(solve(*map(jnp.asarray, a)))

    fd = (at(x + eps * d) - at(x - eps * d)) / (2 * eps)
    jd = np.tensordot(np.asarray(jac), d, axes=d.ndim) if d.ndim else np.asarray(jac) * d
    np.testing.assert_allclose(jd, fd, rtol=1e-5, atol=1e-8)


def test_float32_slide_search_matches_float64_on_random_blocks():
  """The float32 slide search (grid bracket + 5 safeguarded Newton steps) lands on the same
  root as float64 to float32 rounding, on 20,000 random blocks with mu up to 2."""
  rng = np.random.default_rng(11)
  T = 20000
  Gs = np.stack([random_block(rng) for _ in range(T)])
  cs_ = rng.normal(size=(T, 3))
  cs_[:, 2] = -np.abs(cs_[:, 2])
  mus = rng.uniform(0.05, 2.0, T)
  targets = np.zeros(T)
  solve = jax.jit(jax.vmap(cs.solve_single_contact))
  mode = np.asarray(jax.vmap(cs.single_contact_mode)(Gs, cs_, mus, targets))
  lam64 = np.asarray(solve(Gs, cs_, mus, targets))
  lam32 = np.asarray(solve(*(jnp.asarray(x, jnp.float32) for x in (Gs, cs_, mus, targets))))
  slide = mode == cs.MODE_SLIDE
  assert slide.sum() > T // 2
  err = np.abs(lam32 - lam64).max(axis=1) / np.abs(lam64).max(axis=1)
  assert err[slide].max() < 1e-4, np.sort(err[slide])[-5:]
  assert np.quantile(err[slide], 0.99) < 2e-6
