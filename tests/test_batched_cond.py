"""batched_cond: conds and masked maps that still skip work under vmap, with results equal to
the per-world computation and derivatives equal to the closed form in every transform order."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from raisim_jax import batched_cond

# 4 rows: one chunk (evaluated in place, no compaction); 37 rows: one flat scan of 10 chunks;
# 1,000 rows: 250 chunks in groups (batched_cond.GROUPED_FROM_CHUNKS): every code path.
ROW_COUNTS = (4, 37, 1000)


def row_fn(x, y):
  return dict(value=jnp.sin(x) * y, flag=x > 0.7)


def closed_form(x, y, mask):
  return np.where(mask, np.sin(x) * y, 0.0), np.where(mask, x > 0.7, False)


@pytest.fixture(params=ROW_COUNTS)
def data(request):
  rng = np.random.default_rng(0)
  x = rng.uniform(size=(5, request.param))
  y = rng.uniform(size=(5, request.param))
  return x, y, x > 0.5


def test_masked_map_one_world_is_the_masked_closed_form(data):
  x, y, mask = data
  out = jax.jit(lambda m, a, b: batched_cond.masked_map(row_fn, m, a, b))(mask[0], x[0], y[0])
  value, flag = closed_form(x[0], y[0], mask[0])
  np.testing.assert_allclose(out["value"], value, rtol=1e-6)
  np.testing.assert_array_equal(out["flag"], flag)


@pytest.mark.parametrize("nested", [False, True])
def test_masked_map_under_vmap_equals_each_world(data, nested):
  x, y, mask = data
  fn = jax.vmap(lambda m, a, b: batched_cond.masked_map(row_fn, m, a, b))
  if nested:
    out = jax.jit(jax.vmap(fn))(mask[None], x[None], y[None])
    out = jax.tree.map(lambda v: v[0], out)
  else:
    out = jax.jit(fn)(mask, x, y)
  value, flag = closed_form(x, y, mask)
  np.testing.assert_allclose(out["value"], value, rtol=1e-6)
  np.testing.assert_array_equal(out["flag"], flag)
  # An argument shared by every world (not batched).
  shared = jax.vmap(lambda m, a: batched_cond.masked_map(row_fn, m, a, jnp.asarray(y[0])))(mask, x)
  np.testing.assert_allclose(shared["value"], np.where(mask, np.sin(x) * y[0], 0.0), rtol=1e-6)


def test_masked_map_derivatives_in_every_transform_order(data):
  x, y, mask = data
  x, y = x.astype(np.float32), y.astype(np.float32)

  def loss(a, b):
    return jnp.sum(batched_cond.masked_map(row_fn, a > 0.5, a, b)["value"] ** 2)

  # d/dx sum (sin x y)^2 = 2 sin x cos x y^2 on the mask.
  expected = np.where(mask, 2 * np.sin(x) * np.cos(x) * y**2, 0.0)
  np.testing.assert_allclose(jax.grad(loss)(x[0], y[0]), expected[0], rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(loss)))(x, y), expected, rtol=1e-5,
                             atol=1e-7)
  batch_grad = jax.jit(jax.grad(lambda a: jnp.sum(jax.vmap(loss)(a, y))))(x)
  np.testing.assert_allclose(batch_grad, expected, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(jax.jacfwd(loss)(x[0], y[0]), expected[0], rtol=1e-5, atol=1e-7)


def _counting(fn, counter):
  """fn that adds the number of rows it was run on to counter[0] (a host callback)."""
  def counted(*row):
    jax.debug.callback(lambda v: counter.__setitem__(0, counter[0] + np.size(v)), row[0])
    return fn(*row)
  return counted


def test_masked_map_under_vmap_runs_only_chunks_with_a_survivor(data):
  x, y, _ = data
  if x.shape[1] <= 4:
    pytest.skip("one chunk: test_masked_map_of_one_chunk_runs_only_where_a_world_has_a_row")
  counter = [0]
  fn = jax.jit(jax.vmap(lambda m, a, b: batched_cond.masked_map(
      _counting(row_fn, counter), m, a, b, chunk=4)))
  mask = np.zeros_like(x, bool)
  jax.block_until_ready(fn(mask, x, y))
  assert counter[0] == 0                      # nothing survives: no chunk runs in any world
  mask[2, [3, 30]] = True                     # two survivors in one world: one chunk
  out = jax.block_until_ready(fn(mask, x, y))
  assert counter[0] == 5 * 4                  # the batch of 5 worlds x one chunk of 4 rows
  np.testing.assert_allclose(out["value"], np.where(mask, np.sin(x) * y, 0.0), rtol=1e-6)
  counter[0] = 0
  mask[0, -9:] = True                         # nine more in another world: three chunks
  out = jax.block_until_ready(fn(mask, x, y))
  assert counter[0] == 5 * 4 * 3
  np.testing.assert_allclose(out["value"], np.where(mask, np.sin(x) * y, 0.0), rtol=1e-6)


def test_run_where_keeps_the_other_worlds_and_skips_when_no_world_needs_it():
  counter = [0]

  def body(v):
    jax.debug.callback(lambda u: counter.__setitem__(0, counter[0] + 1), v)
    return v * 2.0 + 1.0

  fn = jax.jit(jax.vmap(lambda p, v: batched_cond.run_where(p, body, v)))
  values = jnp.arange(4.0)
  out = fn(jnp.array([True, False, True, False]), values)
  np.testing.assert_array_equal(out, [1.0, 1.0, 5.0, 3.0])
  assert counter[0] == 4                      # the branch ran once, for the batch of 4 worlds
  out = jax.block_until_ready(fn(jnp.zeros(4, bool), values))
  np.testing.assert_array_equal(out, values)
  assert counter[0] == 4                      # no world needed it: not run
  # One world: the plain cond.
  assert float(batched_cond.run_where(jnp.asarray(True), body, jnp.asarray(3.0))) == 7.0
  assert float(batched_cond.run_where(jnp.asarray(False), body, jnp.asarray(3.0))) == 3.0


def test_masked_map_of_one_chunk_runs_only_where_a_world_has_a_row():
  """Rows that fit one chunk are evaluated where they are (no compaction), for the whole
  batch, and only when some world has a survivor; the result is the masked closed form."""
  rng = np.random.default_rng(1)
  x, y = rng.uniform(size=(5, 6)), rng.uniform(size=(5, 6))
  counter = [0]
  fn = jax.jit(jax.vmap(lambda m, a, b: batched_cond.masked_map(
      _counting(row_fn, counter), m, a, b, chunk=8)))
  mask = np.zeros_like(x, bool)
  out = jax.block_until_ready(fn(mask, x, y))
  assert counter[0] == 0
  np.testing.assert_array_equal(out["value"], 0.0)
  mask[3, [0, 4]] = True                      # holes: rows 1-3 and 5 stay zero
  out = jax.block_until_ready(fn(mask, x, y))
  assert counter[0] == 5 * 6                  # every row of every world, once
  value, flag = closed_form(x, y, mask)
  np.testing.assert_allclose(out["value"], value, rtol=1e-6)
  np.testing.assert_array_equal(out["flag"], flag)
