"""Batching helpers (#12 item 1): a domain-randomized batch equals, world by world, the same
world built through the OO API with that parameter; each world differs from the nominal one
exactly in the bodies its parameter touches; masked reset and snapshot restore are exact.

Scene (float64, dt 5 ms, 80 steps): box A ("rubber") pushed along the ground ("floor") by a
constant 5 N, sphere B ("steel") dropped from 0.3 m onto it, a PD pendulum far away."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax import batching

STEPS = 80
PENDULUM = """<robot name="pendulum"><link name="world"/>
  <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="{mass}"/>
    <inertia ixx="{i}" iyy="{i}" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="world"/><child link="arm"/>
    <origin xyz="5 0 2"/><axis xyz="1 0 0"/>
    <limit effort="100" velocity="100" lower="-3" upper="3"/></joint></robot>"""
NOMINAL = dict(mu=0.5, restitution=0.6, box_mass=2.0, gravity=-9.81, ground=0.0, kp=50.0,
               link_mass=1.0)


def _world(mu, restitution, box_mass, gravity, ground, kp, link_mass):
  world = rj.World()
  world.setTimeStep(5e-3)
  world.setGravity([0, 0, gravity])
  world.addGround(ground, "floor")
  world.setMaterialPairProp("floor", "rubber", mu, 0.0, 0.0)
  world.setMaterialPairProp("floor", "steel", 0.8, restitution, 0.0)
  box = world.addBox(0.2, 0.2, 0.2, box_mass, "rubber")
  box.setPosition(0, 0, 0.1)
  box.setLinearVelocity([1.0, 0, 0])
  sphere = world.addSphere(0.1, 1.0, "steel")
  sphere.setPosition(0, 2, 0.4)
  robot = world.addArticulatedSystem(PENDULUM.format(mass=link_mass, i=0.1 * link_mass))
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains([kp], [2.0])
  robot.setPdTarget([0.5], [0.0])
  return world


def _control(model):
  return rj.Control(body_force=jnp.zeros((model.num_bodies, 3)).at[1].set([5.0, 0, 0]),
                    body_torque=jnp.zeros((model.num_bodies, 3)))



def _steps(model, state):
  control = _control(model)
  return jax.lax.fori_loop(0, STEPS, lambda _, s: rj.step(model, s, control), state)


def _trajectory_summary(state):
  """(box position, sphere position, pendulum angle) at the end."""
  return (state.bodies.position[..., 1, :], state.bodies.position[..., 2, :],
          state.articulated[0].generalized_coordinate[..., 0])


def test_randomized_batch_equals_oo_worlds_and_differs_only_where_parameters_differ():
  world = _world(**NOMINAL)
  model, state = world.compile()
  floor, rubber, steel = (world.getMaterialIndex(n) for n in ("floor", "rubber", "steel"))
  nominal = batching.parameters(model, state)
  variants = [
      ({}, nominal),
      ({"mu": 0.2}, nominal.replace(
          friction=batching.set_pair(nominal.friction, floor, rubber, 0.2))),
      ({"restitution": 0.9}, nominal.replace(
          restitution=batching.set_pair(nominal.restitution, floor, steel, 0.9))),
      ({"box_mass": 4.0}, batching.scale_masses(
          nominal, body_scale=jnp.ones(model.num_bodies).at[1].set(2.0))),
      ({"gravity": -5.0}, nominal.replace(gravity=jnp.array([0, 0, -5.0]))),
      ({"ground": 0.03}, nominal.replace(ground_height=jnp.asarray(0.03))),
      ({"kp": 80.0, "link_mass": 1.5}, batching.scale_masses(nominal, articulated_scale=[1.5])
       .replace(articulated=(batching.scale_masses(nominal, articulated_scale=[1.5])
                             .articulated[0].replace(p_gain=jnp.array([80.0])),))),
  ]
  params = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[p for _, p in variants])
  models, states = jax.vmap(batching.apply_parameters, in_axes=(None, None, 0))(
      model, state, params)
  final = jax.jit(jax.vmap(_steps))(models, states)
  box, sphere, angle = (np.asarray(x) for x in _trajectory_summary(final))
  # Which of (box, sphere, pendulum) each parameter touches.
  touches = [(), ("box",), ("sphere",), ("box",), ("box", "sphere", "pendulum"),
             ("box", "sphere"), ("pendulum",)]
  single = jax.jit(_steps)
  for k, (change, _) in enumerate(variants):
    oracle = single(*_world(**{**NOMINAL, **change}).compile())
    o_box, o_sphere, o_angle = (np.asarray(x) for x in _trajectory_summary(oracle))
    np.testing.assert_allclose(box[k], o_box, atol=1e-10, err_msg=str(change))
    np.testing.assert_allclose(sphere[k], o_sphere, atol=1e-10, err_msg=str(change))
    np.testing.assert_allclose(angle[k], o_angle, atol=1e-10, err_msg=str(change))
    for name, values in (("box", box), ("sphere", sphere), ("pendulum", angle)):
      gap = np.max(np.abs(values[k] - values[0]))
      if name in touches[k]:
        assert gap > 1e-4, (change, name, gap)
      else:
        assert gap < 1e-12, (change, name, gap)


def test_masked_reset_replaces_exactly_the_finished_worlds():
  model, fresh = _world(**NOMINAL).compile()
  states = batching.replicate(fresh, 4)
  stepped = jax.jit(jax.vmap(_steps, in_axes=(None, 0)))(model, states)
  done = jnp.array([True, False, True, False])
  reset = jax.jit(batching.masked_reset)(done, fresh, stepped)
  for b in range(4):
    expected = fresh if done[b] else jax.tree.map(lambda x: x[b], stepped)
    for got, want in zip(jax.tree.leaves(jax.tree.map(lambda x: x[b], reset)),
                         jax.tree.leaves(expected)):
      np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_snapshot_restore_continues_bit_for_bit():
  model, state = _world(**NOMINAL).compile()
  first = jax.jit(_steps)(model, state)
  saved = batching.snapshot(first)
  step = jax.jit(_steps, donate_argnums=(1,))
  straight = step(model, step(model, first))      # donates `first`: the snapshot must survive
  restored = step(model, step(model, saved))
  for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(restored)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_replicate_and_parameter_shapes_are_checked():
  model, state = _world(**NOMINAL).compile()
  batch = batching.replicate(state, 3)
  assert all(leaf.shape[0] == 3 for leaf in jax.tree.leaves(batch))
  params = batching.parameters(model, state).replace(articulated=())
  with pytest.raises(ValueError, match="params.articulated has 0 systems, the model 1"):
    batching.apply_parameters(model, state, params)
