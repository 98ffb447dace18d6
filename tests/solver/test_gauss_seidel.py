"""Gauss-Seidel solve_contacts: NCP at convergence, padding, jit/vmap, warm start, gradients."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from raisim_jax.dynamics import contact_solver as cs
from _problems import ncp_residuals, random_problem


def _solve(delassus, c, mu, target, active=None, **kw):
  n = c.shape[0]
  active = np.ones(n, bool) if active is None else active
  return cs.solve_contacts(jnp.asarray(delassus), jnp.asarray(c), jnp.asarray(mu),
                           jnp.asarray(target), jnp.asarray(active), **kw)


def test_two_balls_stacked_closed_form():
  """Ball (mass m) resting on ground; the contact between two stacked balls, no spin coupling.

  Contact 0: ground-ball1 (A = ball1), contact 1: ball1-ball2 (A = ball2), point masses.
  Normal impulses: lambda_1 = m2 g dt, lambda_0 = (m1 + m2) g dt.
  """
  m1, m2, gdt = 1.0, 3.0, 9.81e-3
  I3 = np.eye(3)
  # v0 = u1, v1 = u2 - u1 ; impulse 0 acts on ball1, impulse 1 on ball2 and -on ball1.
  delassus = np.zeros((2, 2, 3, 3))
  delassus[0, 0] = I3 / m1
  delassus[0, 1] = -I3 / m1
  delassus[1, 0] = -I3 / m1
  delassus[1, 1] = I3 / m1 + I3 / m2
  # Free velocities: both balls fall (u* = -g dt e_z), so c0 = u1* and c1 = u2* - u1* = 0.
  c = np.array([[0.0, 0.0, -gdt], [0.0, 0.0, 0.0]])
  res = _solve(delassus, c, np.array([0.8, 0.8]), np.zeros(2), threshold=1e-14,
               max_iterations=500)
  np.testing.assert_allclose(res.impulse, [[0, 0, (m1 + m2) * gdt], [0, 0, m2 * gdt]],
                             atol=1e-12)
  v = np.einsum('ijab,jb->ia', delassus, np.asarray(res.impulse)) + c
  np.testing.assert_allclose(v, 0.0, atol=1e-12)


@pytest.mark.parametrize('n', [2, 4])
def test_random_problems_converge_to_ncp_solution(n):
  rng = np.random.default_rng(n)
  batch = 64
  probs = [random_problem(rng, n) for _ in range(batch)]
  delassus = np.stack([p[0] for p in probs])
  c = np.stack([p[1] for p in probs])
  mu = np.stack([p[2] for p in probs])
  target = np.where(rng.uniform(size=(batch, n)) < 0.3, 0.1, 0.0)
  fn = jax.jit(jax.vmap(functools.partial(cs.solve_contacts, max_iterations=400,
                                          threshold=1e-12)))
  res = fn(delassus, c, mu, target, np.ones((batch, n), bool))
  converged = np.asarray(res.error) < 1e-12
  assert converged.mean() > 0.9
  for b in np.nonzero(converged)[0]:
    r = ncp_residuals(delassus[b], c[b], mu[b], target[b], np.asarray(res.impulse[b]))
    assert r.max() < 1e-8, (b, r)
    assert int(res.iterations[b]) < 400


def test_padded_slots_are_zero_and_inert():
  rng = np.random.default_rng(7)
  delassus, c, mu = random_problem(rng, 3)
  target = np.array([0.0, 0.05, 0.0])
  ref = _solve(delassus, c, mu, target, threshold=1e-13, max_iterations=300)
  # Embed into 5 slots (padded at 1 and 4) with garbage (zero G_ii for one) in the padding.
  n = 5
  slots = [0, 2, 3]
  D = rng.normal(size=(n, n, 3, 3))
  D[1, 1] = 0.0
  for a, i in enumerate(slots):
    for b_, j in enumerate(slots):
      D[i, j] = delassus[a, b_]
  C = rng.normal(size=(n, 3))
  C[slots] = c
  MU = rng.uniform(size=n)
  MU[slots] = mu
  T = rng.uniform(size=n)
  T[slots] = target
  active = np.zeros(n, bool)
  active[slots] = True
  res = _solve(D, C, MU, T, active, threshold=1e-13, max_iterations=300)
  impulse = np.asarray(res.impulse)
  assert np.all(impulse[[1, 4]] == 0.0)
  np.testing.assert_allclose(impulse[slots], ref.impulse, atol=1e-12)

  # Gradients finite everywhere, exactly zero on padded slots' inputs.
  def loss(D, C, MU, T):
    r = cs.solve_contacts(D, C, MU, T, jnp.asarray(active), max_iterations=30)
    return jnp.sum(r.impulse ** 2) + jnp.sum(r.impulse)

  grads = jax.grad(loss, argnums=(0, 1, 2, 3))(*map(jnp.asarray, (D, C, MU, T)))
  for g in grads:
    assert np.all(np.isfinite(np.asarray(g)))
  gD, gC, gMU, gT = map(np.asarray, grads)
  assert np.all(gC[[1, 4]] == 0) and np.all(gMU[[1, 4]] == 0) and np.all(gT[[1, 4]] == 0)
  assert np.all(gD[1] == 0) and np.all(gD[:, 1] == 0)


def test_all_inactive_and_zero_delassus_no_nan():
  n = 3
  res = _solve(np.zeros((n, n, 3, 3)), np.zeros((n, 3)), np.zeros(n), np.zeros(n),
               np.zeros(n, bool))
  assert np.all(np.asarray(res.impulse) == 0.0)
  g = jax.grad(lambda c: jnp.sum(cs.solve_contacts(
      jnp.zeros((n, n, 3, 3)), c, jnp.zeros(n), jnp.zeros(n), jnp.zeros(n, bool),
      max_iterations=5).impulse))(jnp.ones((n, 3)))
  assert np.all(np.asarray(g) == 0.0)


def test_jit_and_vmap_1024_match_unbatched():
  rng = np.random.default_rng(11)
  n, batch = 4, 1024
  probs = [random_problem(rng, n) for _ in range(batch)]
  delassus = np.stack([p[0] for p in probs])
  c = np.stack([p[1] for p in probs])
  mu = np.stack([p[2] for p in probs])
  target = np.zeros((batch, n))
  active = rng.uniform(size=(batch, n)) < 0.8
  kw = dict(max_iterations=40)
  batched = jax.jit(jax.vmap(functools.partial(cs.solve_contacts, **kw)))(
      delassus, c, mu, target, active)
  single = jax.jit(functools.partial(cs.solve_contacts, **kw))
  for b in list(range(0, batch, 97)) + [batch - 1]:
    r = single(delassus[b], c[b], mu[b], target[b], active[b])
    np.testing.assert_allclose(batched.impulse[b], r.impulse, rtol=1e-10, atol=1e-13)
    assert int(batched.iterations[b]) == int(r.iterations)
  eager = cs.solve_contacts(*map(jnp.asarray, (delassus[3], c[3], mu[3], target[3], active[3])),
                            **kw)
  np.testing.assert_allclose(eager.impulse, batched.impulse[3], rtol=1e-10, atol=1e-13)


def test_early_exit_warm_start_and_order():
  rng = np.random.default_rng(3)
  delassus, c, mu = random_problem(rng, 4)
  target = np.zeros(4)
  res = _solve(delassus, c, mu, target)
  assert 1 < int(res.iterations) < 150 and float(res.error) < 1e-8
  warm = _solve(delassus, c, mu, target, initial_impulse=res.impulse)
  assert int(warm.iterations) == 1
  rev = _solve(delassus, c, mu, target, reverse_order=True, threshold=1e-13, max_iterations=400)
  fwd = _solve(delassus, c, mu, target, threshold=1e-13, max_iterations=400)
  assert ncp_residuals(delassus, c, mu, target, np.asarray(rev.impulse)).max() < 1e-8
  np.testing.assert_allclose(rev.impulse, fwd.impulse, atol=1e-8)
  few = _solve(delassus, c, mu, target, max_iterations=3)
  assert int(few.iterations) == 3


def _fd_check(fun, x, rng, eps=1e-6, rtol=1e-4, atol=1e-7):
  x = np.asarray(x, np.float64)
  g = np.asarray(jax.jit(jax.grad(fun))(jnp.asarray(x)))
  for _ in range(4):
    d = rng.normal(size=x.shape)
    fd = (fun(jnp.asarray(x + eps * d)) - fun(jnp.asarray(x - eps * d))) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=rtol, atol=atol)


def _modes(delassus, c, mu, target, impulse):
  n = len(c)
  v = np.einsum('ijab,jb->ia', delassus, impulse) + c
  modes = []
  for i in range(n):
    c_prime = v[i] - delassus[i, i] @ impulse[i]
    modes.append(int(cs.single_contact_mode(delassus[i, i], c_prime, mu[i], target[i])))
  return modes


@pytest.mark.parametrize('kind', ['stick', 'slide', 'mixed'])
def test_gradients_match_finite_differences(kind):
  rng = np.random.default_rng({'stick': 0, 'slide': 1, 'mixed': 2}[kind])
  n = 3
  delassus, c, _ = random_problem(rng, n)
  c[:, 2] = -np.abs(c[:, 2]) - 0.5
  if kind == 'stick':
    mu = np.full(n, 5.0)
    c[:, :2] *= 0.05
  elif kind == 'slide':
    mu = np.full(n, 0.2)
    c[:, :2] = 3.0 * np.sign(c[:, :2]) + c[:, :2]
  else:
    mu = np.array([5.0, 0.2, 0.5])
  target = np.full(n, 0.05)
  kw = dict(max_iterations=120, threshold=0.0)
  sol = np.asarray(_solve(delassus, c, mu, target, **kw).impulse)
  modes = _modes(delassus, c, mu, target, sol)
  assert modes.count(cs.MODE_OPEN) < n
  if kind == 'stick':
    assert modes == [cs.MODE_STICK] * n
  if kind == 'slide':
    assert modes == [cs.MODE_SLIDE] * n
  weights = rng.normal(size=(n, 3))

  def loss_c(cc):
    r = cs.solve_contacts(jnp.asarray(delassus), cc, jnp.asarray(mu), jnp.asarray(target),
                          jnp.ones(n, bool), **kw)
    return jnp.sum(r.impulse * weights)

  def loss_mu(mm):
    r = cs.solve_contacts(jnp.asarray(delassus), jnp.asarray(c), mm, jnp.asarray(target),
                          jnp.ones(n, bool), **kw)
    return jnp.sum(r.impulse * weights)

  def loss_G(GG):
    GG = 0.5 * (GG + jnp.swapaxes(jnp.swapaxes(GG, 0, 1), 2, 3))
    r = cs.solve_contacts(GG, jnp.asarray(c), jnp.asarray(mu), jnp.asarray(target),
                          jnp.ones(n, bool), **kw)
    return jnp.sum(r.impulse * weights)

  _fd_check(jax.jit(loss_c), c, rng)
  _fd_check(jax.jit(loss_mu), mu, rng)
  _fd_check(jax.jit(loss_G), delassus, rng)


def test_single_contact_slide_jvp_matches_finite_differences():
  rng = np.random.default_rng(4)
  from _problems import random_block
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
