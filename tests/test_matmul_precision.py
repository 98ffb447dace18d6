"""The step's float32 matrix products run at full precision on every backend.

On NVIDIA GPUs JAX's default float32 matmul precision is TF32; measured on an H100
(raisim_jax/math/matmul_precision.py) it cost the humanoid's M_eff^-1 three digits. This
machine has no GPU, and its CPU computes every precision exactly, so the tests read the
programs traced as on a GPU (the decorator does nothing on a CPU backend): every `dot_general` of a step, of a batched step, of a rollout's reverse-mode
gradient and of the pinned (closed-loop) solve carries precision HIGHEST, also when the user
asked for the fastest precision process-wide, and the user's setting is left as it was.
"""

import os

import jax
import jax.numpy as jnp
import pytest

import raisim_jax as rj
from tests.jaxpr_walk import equations


@pytest.fixture(autouse=True)
def _as_on_a_gpu(monkeypatch):
  """The decorator acts where the backend is not a CPU (on CPUs float32 products are exact
  and the attributes slowed XLA's CPU compile of gradients 3x): trace as on a GPU."""
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")

RSC = os.path.join(os.path.dirname(__file__), "..", "rsc", "urdf")


def _dot_precisions(jaxpr):
  """Precision parameter of every dot_general in `jaxpr` and its sub-jaxprs (scan, while,
  cond branches, custom derivative rules, checkpointed and jitted calls)."""
  return [eqn.params["precision"] for eqn in equations(jaxpr)
          if eqn.primitive.name == "dot_general"]


def _robots_and_bodies():
  """Two different robots, a box, a sphere and a capsule on the ground, float32: contact,
  limit and articulated rows, single-body island blocks."""
  world = rj.World(dtype=jnp.float32)
  world.addGround()
  world.addArticulatedSystem(os.path.join(RSC, "all_joints.urdf"))
  world.addArticulatedSystem(os.path.join(RSC, "fixed_arm.urdf"))
  world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(2.0, 0.0, 0.1)
  world.addSphere(0.1, 1.0).setPosition(2.0, 0.0, 0.3)
  world.addCapsule(0.05, 0.2, 1.0).setPosition(-2.0, 0.0, 0.05)
  return world


def _pinned():
  world = rj.World(dtype=jnp.float32)
  world.addGround()
  world.addArticulatedSystem(os.path.join(RSC, "fourbar.urdf"))
  return world


def _assert_all_highest(jaxpr):
  precisions = _dot_precisions(jaxpr)
  assert precisions, "the traced program has no matrix product: the walk found nothing"
  highest = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)
  wrong = [p for p in precisions if p != highest]
  assert not wrong, f"{len(wrong)} of {len(precisions)} products not at HIGHEST: {wrong[:3]}"


@pytest.mark.parametrize("build", [_robots_and_bodies, _pinned])
def test_every_product_of_a_batched_step_is_at_full_precision(build):
  model, state = build().compile()
  batch = rj.batching.replicate(state, 2)
  # The fastest precision asked for process-wide (what a GPU user's TF32 default amounts to).
  with jax.default_matmul_precision("bfloat16"):
    jaxpr = jax.make_jaxpr(jax.vmap(lambda s: rj.step(model, s)))(batch)
    assert jax.config.jax_default_matmul_precision == "bfloat16"   # the user's setting stays
  _assert_all_highest(jaxpr)


@pytest.mark.parametrize("build", [_robots_and_bodies, _pinned])
def test_every_product_of_a_rollout_gradient_is_at_full_precision(build):
  """Reverse mode through the differentiable solver: the transposed products inherit the
  precision, and the custom derivative rules (the local contact solve's, the pins'
  pseudo-inverse's), traced after the step's trace has returned, set it themselves."""
  model, state = build().compile()

  def loss(velocity):
    robot = state.articulated[0].replace(generalized_velocity=velocity)
    final, _ = rj.rollout(model, state.replace(articulated=(robot,) + state.articulated[1:]), 2)
    return jnp.sum(final.bodies.position[:, 2]) + jnp.sum(
        final.articulated[0].generalized_coordinate)

  with jax.default_matmul_precision("bfloat16"):
    jaxpr = jax.make_jaxpr(jax.grad(loss))(state.articulated[0].generalized_velocity)
  _assert_all_highest(jaxpr)
