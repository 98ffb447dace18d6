"""Stacks of boxes with unequal masses converge within a few sweeps (issue #9, item 5).

Per-contact Gauss-Seidel alone ended most steps of a 1:2:4:7:10 stack (heavy boxes on top) at
the 150-sweep cap (93% of steps) and every step of a 1:1:1:1:100 stack. The island block
correction (dynamics/island_block.py) solves all rows between the stack's boxes and the ground
as one block. Oracle: the NCP itself; a converged resting stack stays where it is (drift) and
the solver's stopping test is the threshold, not the cap. Float64, dt = 1 ms, default settings,
the second half of 1 s simulated (the first half settles the stack).
"""

import jax
import numpy as np
import pytest

import raisim_jax as rj


def _stack_sweeps(masses, forward_order):
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  for k, mass in enumerate(masses):
    world.addBox(0.5, 0.5, 0.2, float(mass)).setPosition(0, 0, 0.1 + 0.2 * k)
  world.setContactSolverIterationOrder(forward_order)
  model, state = world.compile()
  _, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 1000)
  sweeps = np.asarray(trajectory.solver_iterations)[500:]
  position = np.asarray(trajectory.bodies.position[:, 1:1 + len(masses)])
  return sweeps, np.abs(position - position[0]).max()


@pytest.mark.parametrize("masses, forward_order", [
    ([1, 2, 4, 7, 10], True), ([1, 2, 4, 7, 10], False), ([1, 10, 1, 10, 1], False),
    ([1, 1, 1, 1, 100], True)])
def test_mass_ratio_stack_converges_below_the_cap(masses, forward_order):
  sweeps, drift = _stack_sweeps(masses, forward_order)
  assert sweeps.max() < 150, sweeps.max()       # never stopped by the cap
  assert sweeps.mean() < 5.0, sweeps.mean()     # was 111-150 per step
  assert drift < 1e-7, drift                    # a converged stack does not creep


def test_island_labels_are_the_connected_components_of_the_contact_graph():
  """Oracle: scipy's connected components of the graph whose edges are the rows between two
  dynamic bodies (a row with a static side, marked n, connects nothing)."""
  from scipy.sparse import coo_matrix
  from scipy.sparse.csgraph import connected_components

  from raisim_jax.dynamics import island_block

  rng = np.random.default_rng(3)
  n = 40
  side_body = rng.integers(0, n, size=(60, 2))
  side_body[rng.random(60) < 0.3, 1] = n          # rows against static bodies
  labels = np.asarray(jax.jit(island_block.island_labels, static_argnums=1)(
      jax.numpy.asarray(side_body, jax.numpy.int32), n))
  edges = side_body[(side_body < n).all(axis=1)]
  graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
  count, components = connected_components(graph, directed=False)
  assert labels[n] == n
  for b in range(n):   # each body labelled by the smallest body of its component
    assert labels[b] == np.flatnonzero(components == components[b]).min()
  assert len(set(labels[:n])) == count


def test_a_converged_island_keeps_its_block_solution_in_later_newton_steps():
  """The 10-sphere pyramid, default (differentiable) solver, float64: its first steps each
  converge within BLOCK_SWEEP + 1 sweeps (the block move is taken). The Newton solve of the
  move had converged to 2.5e-15 and then, stepping on from a rounding-level residual with a
  nearly singular matrix, jumped to 7e-6: the move was rejected from the second step on and
  every later step ran to the 150-sweep cap. Oracle: the NCP (the sweeps' own stopping test
  at the default threshold) and the pyramid staying where it was placed."""
  from raisim_jax.dynamics import gauss_seidel
  from tests.test_resting_stacks import _sphere_pyramid
  world, spheres = _sphere_pyramid(jax.numpy.float64)
  world.setSleepingEnabled(False)
  model, state = world.compile()
  _, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 8)
  sweeps = np.asarray(trajectory.solver_iterations)
  assert sweeps.max() <= gauss_seidel.BLOCK_SWEEP + 1, sweeps
  position = np.asarray(trajectory.bodies.position[:, 1:11])
  assert np.abs(position - position[0]).max() < 1e-9


def test_the_move_on_the_active_rows_alone_is_the_move_on_every_row(monkeypatch):
  """The differentiable solver runs the block move on the active rows gathered into
  `island_block.compact_size` slots when every world's fit (an inactive row adds nothing to
  the move's sums); `SolverModel.block_move="every_row"` (the OO World's one-world steps,
  once they need the move) runs it on every row, one traced move. Oracle: the two solves on the 1:2:4:7:10 stack
  while it settles (the move taken in its first steps) and two boxes sliding (the move tried
  and rejected): the same sweeps and states to rounding (float64)."""
  from raisim_jax.dynamics import gauss_seidel, island_block

  def scene(sliding):
    world = rj.World()
    world.setTimeStep(1e-3)
    world.addGround()
    masses = [1, 2] if sliding else [1, 2, 4, 7, 10]
    for k, mass in enumerate(masses):
      box = world.addBox(0.5, 0.5, 0.2, float(mass))
      box.setPosition(2.0 * k if sliding else 0, 0, 0.1 + (0 if sliding else 0.2 * k))
      if sliding:
        box.setVelocity([1.0, 0.5 * k, 0], [0, 0, 0])
    return world.compile()

  compact_size = island_block.compact_size
  sizes = []
  monkeypatch.setattr(island_block, "compact_size",
                      lambda rows: sizes.append(compact_size(rows)) or compact_size(rows))
  for sliding in (False, True):
    model, state = scene(sliding)
    assert model.solver.block_move == "compact"                 # the default
    run = lambda m: jax.jit(lambda s: rj.rollout(m, s, 40)[1])(state)   # a new trace
    sizes.clear()
    compacted = run(model)
    assert sizes and sizes[0] is not None          # the compact branch exists ...
    rows = np.asarray(compacted.contacts.active).sum(axis=-1)
    assert rows.max() <= sizes[0], rows.max()     # ... and is the one taken
    sizes.clear()
    every_row = run(model.replace(solver=model.solver.replace(block_move="every_row")))
    assert not sizes                               # no compact branch traced
    assert gauss_seidel.BLOCK_SWEEP < np.asarray(every_row.solver_iterations).max()
    np.testing.assert_array_equal(compacted.solver_iterations, every_row.solver_iterations)
    for a, b in ((compacted.bodies.position, every_row.bodies.position),
                 (compacted.bodies.linear_velocity, every_row.bodies.linear_velocity),
                 (compacted.contacts.impulse, every_row.contacts.impulse)):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)


def test_the_newton_steps_stop_where_the_multipliers_stop_moving(monkeypatch):
  """The block move's semismooth Newton solve stops once no multiplier moves by more than
  `island_block.STALL_ULPS` ulps of its island's largest (the resting pyramid's takes 7 of
  NEWTON_STEPS). Oracle: the same rollout with every one of the NEWTON_STEPS steps taken
  (the stall test off), on the 10-sphere pyramid settling (float64, the move taken each step)
  and the 1:2:4:7:10 stack: the same sweep counts and states to rounding."""
  from raisim_jax.dynamics import island_block
  from tests.test_resting_stacks import _sphere_pyramid

  def stack():
    world = rj.World()
    world.setTimeStep(1e-3)
    world.addGround()
    for k, mass in enumerate([1, 2, 4, 7, 10]):
      world.addBox(0.5, 0.5, 0.2, float(mass)).setPosition(0, 0, 0.1 + 0.2 * k)
    return world

  for world in (_sphere_pyramid(jax.numpy.float64)[0], stack()):
    world.setSleepingEnabled(False)
    model, state = world.compile()
    run = lambda: jax.jit(lambda s: rj.rollout(model, s, 12)[1])(state)   # a new trace
    stopping = run()
    monkeypatch.setattr(island_block, "STALL_ULPS", -1.0)    # every step "moves"
    every_step = run()
    monkeypatch.undo()
    np.testing.assert_array_equal(stopping.solver_iterations, every_step.solver_iterations)
    for a, b in ((stopping.bodies.position, every_step.bodies.position),
                 (stopping.bodies.linear_velocity, every_step.bodies.linear_velocity),
                 (stopping.contacts.impulse, every_step.contacts.impulse)):
      # atol 1e-11: the lateral velocities are rounding noise around 0 (~1e-12), which the
      # extra Newton steps reshuffle by up to 2.0e-12 (XLA's LLVM-IR emitters, conftest.py).
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)
