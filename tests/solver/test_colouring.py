"""The coloured sweep order of worlds of single bodies (`gauss_seidel._schedule`): every
active row is visited exactly once per sweep, rows solved together share no movable body,
colours are greedy (a row takes the smallest colour its movable bodies leave free), a body
with more rows than the 32 tracked colours still gets each row visited once, and the reverse
order reverses the colours. Checked against a plain Python greedy colouring of the same
rows; the solves themselves are judged by the NCP and momentum oracles of
test_gauss_seidel.py (its pile scene runs coloured)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax import contact_heads
from raisim_jax.dynamics import contact_dynamics, gauss_seidel
from tests.solver.test_gauss_seidel import LANDER


def _problem(index_a, index_b, inv_mass, active, weight_b=None, reverse=0):
  rows = len(index_a)
  return dict(index_a=jnp.asarray(index_a, jnp.int32), index_b=jnp.asarray(index_b, jnp.int32),
              weight_a=jnp.ones(rows), weight_b=jnp.ones(rows) if weight_b is None
              else jnp.asarray(weight_b, float),
              inv_mass=jnp.asarray(inv_mass, float), row_active=jnp.asarray(active),
              reverse_order=jnp.asarray(reverse, jnp.int32))


def _sweep(layout, problem):
  """[(rows of slot j)] of one sweep, as the solver visits them."""
  problem = {**problem, "schedule": jax.jit(gauss_seidel._schedule, static_argnums=0)(
      layout, problem)}
  count = int(problem["schedule"]["num_slots"])
  out = []
  for j in range(count):
    rows, valid = gauss_seidel._slot(layout, problem, jnp.asarray(j))
    out.append([int(r) for r, v in zip(rows, valid) if v])
  return out


def _greedy(index_a, index_b, inv_mass, active, weight_b):
  """Reference colouring: rows in index order, smallest colour free on both movable sides."""
  used, colour = {}, {}
  for i in range(len(index_a)):
    if not active[i]:
      continue
    nodes = [index_a[i]] if inv_mass[index_a[i]] > 0 else []
    if inv_mass[index_b[i]] > 0 and weight_b[i] != 0:
      nodes.append(index_b[i])
    taken = set().union(*(used.get(n, set()) for n in nodes))
    c = next(k for k in range(10_000) if k not in taken)
    colour[i] = c
    for n in nodes:
      used.setdefault(n, set()).add(c)
  return colour


@pytest.mark.parametrize("seed", range(6))
def test_slots_cover_the_active_rows_once_by_greedy_colour(seed):
  rng = np.random.default_rng(seed)
  bodies, rows = 12, 40
  inv_mass = np.where(rng.random(bodies) < 0.2, 0.0, rng.uniform(0.5, 2.0, bodies))
  inv_mass[0] = 0.0                                          # the ground
  index_a = rng.integers(1, bodies, rows)
  other = (index_a + rng.integers(1, bodies, rows)) % bodies       # never the row's own body
  index_b = np.where(rng.random(rows) < 0.4, 0, other)
  active = rng.random(rows) < 0.8
  weight_b = np.where(rng.random(rows) < 0.1, 0.0, 1.0)     # a frozen side acts on nothing
  layout = gauss_seidel.Layout(rows=rows, has_singles=True, has_systems=False, num_limits=0,
                               num_pins=0, iteration_capacity=150, early_exit=True,
                               colour_width=4)
  problem = _problem(index_a, index_b, inv_mass, active, weight_b)
  sweep = _sweep(layout, problem)
  visited = [r for slot in sweep for r in slot]
  assert sorted(visited) == sorted(np.flatnonzero(active).tolist())
  expected = _greedy(index_a, index_b, inv_mass, active, weight_b)
  colour_of_slot = []
  for slot in sweep:
    assert 1 <= len(slot) <= 4
    colours = {expected[r] for r in slot}
    assert len(colours) == 1, (slot, colours)                 # one colour per slot
    colour_of_slot.append(colours.pop())
    movable = [n for r in slot for n, w in ((index_a[r], 1.0), (index_b[r], weight_b[r]))
               if inv_mass[n] > 0 and w != 0]
    assert len(movable) == len(set(movable)), slot           # no shared movable body
  assert colour_of_slot == sorted(colour_of_slot)            # colours in order
  reverse = _sweep(layout, {**problem, "reverse_order": jnp.asarray(1, jnp.int32)})
  assert reverse == sweep[::-1]


def test_a_body_with_more_rows_than_tracked_colours():
  """40 rows on one movable body: 32 tracked colours, then one colour per row; each row once."""
  rows = 40
  layout = gauss_seidel.Layout(rows=rows, has_singles=True, has_systems=False, num_limits=0,
                               num_pins=0, iteration_capacity=150, early_exit=True,
                               colour_width=4)
  problem = _problem(np.ones(rows, int), np.zeros(rows, int), [0.0, 1.0], np.ones(rows, bool))
  sweep = _sweep(layout, problem)
  assert [len(slot) for slot in sweep] == [1] * rows
  assert [r for slot in sweep for r in slot] == list(range(rows))


def test_no_active_row_gives_an_empty_sweep():
  layout = gauss_seidel.Layout(rows=5, has_singles=True, has_systems=False, num_limits=0,
                               num_pins=0, iteration_capacity=150, early_exit=True,
                               colour_width=4)
  problem = _problem([1] * 5, [0] * 5, [0.0, 1.0], np.zeros(5, bool))
  assert _sweep(layout, problem) == []


def test_only_forward_only_solves_of_single_bodies_are_coloured(traced_layouts):
  """The colour width the step compiles: 8 for single bodies under the forward-only solver
  where the solve has at least COLOUR_MIN_ROWS rows; 1 (row by row) for smaller solves, the
  differentiable solver and worlds with an articulated system. The forward-only step traces
  its solve once per head of the contact buffer (0, 4, 8 and a quarter of its slots: 16
  here, below COLOUR_MIN_ROWS) and once on the whole buffer (contact_dynamics.solve_contacts);
  with an articulated system (the lander) the 4 and 8 heads share one sweep loop, and its
  limited joint adds three: the zero and small heads without the limit rows, for steps where
  none is active."""
  def width(differentiable, robot):
    world = rj.World()
    world.addGround()
    world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(0, 0, 0.1)
    if robot:
      world.addArticulatedSystem(LANDER)
    world.setContactSolverDifferentiable(differentiable)
    model, state = world.compile()
    traced_layouts.clear()
    jax.eval_shape(rj.step, model, state)
    heads = contact_heads.head_sizes(state.contacts.active.shape[0])
    return ([layout.colour_width for layout in traced_layouts], 1 + len(heads), heads,
            state.contacts.active.shape[0])

  widths, solves, heads, capacity = width(False, False)
  # The heads (16 slots at most) are below COLOUR_MIN_ROWS, the whole buffer is not.
  assert heads == (0, 4, 8, 16) and heads[-1] < contact_dynamics.COLOUR_MIN_ROWS == 32 <= capacity
  assert solves == 5 and widths == [1] * 4 + [contact_dynamics.COLOUR_WIDTH] == [1] * 4 + [8]
  assert width(True, False)[0] == [1]
  widths, solves, _, _ = width(False, True)
  # The 4 and 8 heads share one sweep loop; + the 0, 4 and 8 heads without limits.
  assert widths == [1] * (solves - 1 + 3) and solves == 5
