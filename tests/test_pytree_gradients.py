"""jax.grad with respect to a whole State or Model (issue #11 item 4), and tree_replace.

The pytrees carry integer and boolean leaves (index tables, body types, contact flags,
the divergence flag); `jax.grad(loss, allow_int=True)` is the documented one-line idiom:
those leaves get float0 (empty) cotangents and every float leaf its derivative."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj


def _thrown_box():
  world = rj.World()
  world.setTimeStep(0.01)
  world.addGround()
  box = world.addBox(0.2, 0.2, 0.2, 2.0)
  box.setPosition(0, 0, 1.0)
  box.setVelocity([1.0, 0, 2.0], [0, 0.5, 0])
  return world.compile()


def _height(model, state, steps=20):
  final, _ = rj.rollout(model, state, steps)
  return final.bodies.position[1, 2]


def test_grad_with_respect_to_the_whole_state_matches_the_closed_form():
  model, state = _thrown_box()
  grads = jax.grad(lambda s: _height(model, s), allow_int=True)(state)
  # Free flight (no contact in 0.2 s from 1 m): z(T) = z0 + vz0 T - g T (T + dt) / 2 for
  # semi-implicit Euler, so dz/dz0 = 1 and dz/dvz0 = T.
  assert float(grads.bodies.position[1, 2]) == pytest.approx(1.0, abs=1e-12)
  assert float(grads.bodies.linear_velocity[1, 2]) == pytest.approx(0.2, abs=1e-12)
  assert float(grads.bodies.linear_velocity[1, 0]) == pytest.approx(0.0, abs=1e-12)
  assert grads.contacts.active.dtype == jax.dtypes.float0
  assert grads.finite.dtype == jax.dtypes.float0


def test_grad_with_respect_to_the_whole_model_matches_the_closed_form():
  model, state = _thrown_box()
  grads = jax.grad(lambda m: _height(m, state), allow_int=True)(model)
  # z(T) = ... + g_z T (T + dt) / 2, so dz/dg_z = 0.2 * 0.21 / 2; the mass does not matter.
  assert float(grads.gravity[2]) == pytest.approx(0.2 * 0.21 / 2, rel=1e-12)
  assert float(grads.bodies.mass[1]) == pytest.approx(0.0, abs=1e-12)
  assert grads.collision.shapes.body.dtype == jax.dtypes.float0
  # Finite difference on the time step agrees with autodiff.
  def with_dt(dt):
    return _height(model.replace(time_step=jnp.asarray(dt)), state)
  eps = 1e-6
  fd = (with_dt(0.01 + eps) - with_dt(0.01 - eps)) / (2 * eps)
  assert float(grads.time_step) == pytest.approx(float(fd), rel=1e-6)


def test_plain_grad_names_the_idiom_in_its_error():
  model, state = _thrown_box()
  with pytest.raises(TypeError, match="allow_int"):
    jax.grad(lambda s: _height(model, s))(state)


def test_tree_replace_edits_nested_fields_and_tuple_entries():
  model, state = _thrown_box()
  new = rj.tree_replace(state, {"bodies.position": state.bodies.position.at[1, 2].set(5.0),
                                "time": jnp.asarray(3.0)})
  assert float(new.bodies.position[1, 2]) == 5.0 and float(new.time) == 3.0
  assert float(state.bodies.position[1, 2]) == 1.0          # the original is unchanged
  np.testing.assert_array_equal(new.bodies.quaternion, state.bodies.quaternion)
  # One semi-implicit Euler step from z = 5 with vz = 2: z = 5 + dt (vz - g dt).
  assert float(_height(model, new, 1)) == pytest.approx(5 + 0.01 * (2 - 9.81 * 0.01), abs=1e-12)
  with pytest.raises(KeyError, match="'bodies.positon'.*no field 'positon'"):
    rj.tree_replace(state, {"bodies.positon": 0.0})
  with pytest.raises(KeyError, match="not an index of a tuple of 0 entries"):
    rj.tree_replace(state, {"articulated.0.p_target": 0.0})
