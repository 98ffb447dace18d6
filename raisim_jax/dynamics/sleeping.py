"""Sleeping islands (RaiSim's World::setSleepingEnabled): resting groups of bodies skip the
contact solve and keep their poses until something touches or edits them.

An island is a group of DYNAMIC single bodies connected by this step's contacts (rows whose
two sides are dynamic single bodies, as in dynamics/island_block.py). It sleeps through a step
when
  * sleeping is enabled,
  * every body in it ended each of its last `quiet_steps` steps below both velocity
    thresholds (the per-body counter `State.bodies.quiet_steps`),
  * it rests on something static: at least one of its contacts has a STATIC body on the
    other side (so a body at the top of its flight, slow for a step or two, never sleeps),
  * none of its contacts touches a KINEMATIC body or a link of an articulated system (those
    move on their own; articulated systems never sleep), and no external force or torque is
    applied to any of its bodies this step.
A sleeping body is STATIC for that step's free motion and pose update: zero velocity, an
unchanged pose; its contacts (with static bodies and other sleeping bodies) leave the solve
and the position correction, and are reported with the impulse they were found with (last
step's, which is also the warm start when the island wakes). A body touched by an awake body
joins that body's island, so the island wakes in the same step (RaiSim wakes it on the next
one; waking at once lets the impact be solved against the pile rather than against a wall).
A user edit of a body (pose, velocity, mass, ...) sets its counter to 0, which keeps its
island awake for at least `quiet_steps` steps.

All of it is integer and boolean bookkeeping selected by `where`: no NaN and no branch that
reverse-mode differentiation cannot follow (a sleeping body's velocity has zero derivative).
"""

import jax
import jax.numpy as jnp

from raisim_jax.dynamics.island_block import island_labels
from raisim_jax.types import BodyType, Contacts, Model, State


def asleep_bodies(model: Model, state: State, contacts: Contacts, force: jax.Array,
                  torque: jax.Array) -> jax.Array:
  """(n,) bool: the single bodies whose island sleeps through this step.

  Args:
    model: Model (its `sleeping` settings; None never sleeps).
    state: State at the start of the step (its quiet counters).
    contacts: this step's contacts (from integrate1): they define the islands.
    force, torque: (n, 3) external loads of this step (world frame); a loaded body wakes.
  """
  n = model.num_bodies
  settings = model.sleeping
  if settings is None or n == 0:
    return jnp.zeros((n,), bool)

  def islands():
    body_type = model.bodies.body_type
    dynamic = body_type == BodyType.DYNAMIC
    loaded = jnp.any(force != 0, axis=-1) | jnp.any(torque != 0, axis=-1)
    rested = dynamic & (state.bodies.quiet_steps >= settings.quiet_steps) & ~loaded

    active = contacts.active
    single = [active & (side >= 0) & (side < n) for side in (contacts.body_a, contacts.body_b)]
    index = [jnp.clip(side, 0, n - 1) for side in (contacts.body_a, contacts.body_b)]
    moving = [s & dynamic[i] for s, i in zip(single, index)]
    static = [s & (body_type[i] == BodyType.STATIC) for s, i in zip(single, index)]
    # A side that is neither a single body nor static: a link, or a kinematic body.
    foreign = [active & ~st & ~mv for st, mv in zip(static, moving)]

    both = moving[0] & moving[1]
    label = island_labels(jnp.stack([jnp.where(both, index[0], n),
                                     jnp.where(both, index[1], n)], axis=-1), n)
    # Per island (n + 1 slots, the last one collects rows without a moving side).
    row_island = jnp.where(moving[0], label[index[0]],
                           jnp.where(moving[1], label[index[1]], n))
    supported = jnp.zeros((n + 1,), bool).at[row_island].max(
        (moving[0] & static[1]) | (moving[1] & static[0]))
    touched = jnp.zeros((n + 1,), bool).at[row_island].max(
        (moving[0] & foreign[1]) | (moving[1] & foreign[0]))
    all_rested = jnp.ones((n + 1,), bool).at[label[:n]].min(rested | ~dynamic)
    island = label[:n]
    return dynamic & all_rested[island] & supported[island] & ~touched[island]

  return jax.lax.cond(settings.enabled, islands, lambda: jnp.zeros((n,), bool))


def frozen(model: Model, asleep: jax.Array) -> Model:
  """`model` with the sleeping bodies STATIC (for the free motion and the pose update)."""
  bodies = model.bodies
  return model.replace(bodies=bodies.replace(
      body_type=jnp.where(asleep, BodyType.STATIC, bodies.body_type).astype(jnp.int32)))


def frozen_rows(contacts: Contacts, asleep: jax.Array, num_bodies: int) -> jax.Array:
  """(C,) bool: active contacts between a sleeping body and a static or sleeping one (both
  sides of such a row are immobile this step; an awake body never touches a sleeping one)."""
  n = num_bodies
  if n == 0:
    return jnp.zeros_like(contacts.active)
  sleeping_side = [(side >= 0) & (side < n) & asleep[jnp.clip(side, 0, n - 1)]
                   for side in (contacts.body_a, contacts.body_b)]
  return contacts.active & (sleeping_side[0] | sleeping_side[1])


def count_quiet_steps(model: Model, quiet_steps: jax.Array, linear_velocity: jax.Array,
                      angular_velocity: jax.Array) -> jax.Array:
  """(n,) int32 counters after a step: +1 (capped at the model's quiet_steps) for a body whose
  speeds are below both thresholds, 0 otherwise. `linear_velocity` (n, 3) is the step's
  motion: the end-of-step velocity plus the penetration correction's displacement / dt, so a
  body still being pushed out of a penetration is not quiet; world frame."""
  settings = model.sleeping
  if settings is None:
    return quiet_steps
  quiet = ((jnp.sum(linear_velocity ** 2, axis=-1) < settings.linear_threshold ** 2)
           & (jnp.sum(angular_velocity ** 2, axis=-1) < settings.angular_threshold ** 2))
  return jnp.where(quiet, jnp.minimum(quiet_steps + 1, settings.quiet_steps), 0).astype(
      jnp.int32)
