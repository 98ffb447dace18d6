"""Contact impulses for single bodies: RaiSim's per-contact iteration in body-velocity space.

For contact i between bodies a (object A) and b, with r = p_i - com and the transposed contact
frame F_i (rows x, y, z; z = normal towards A):
    v_i = F_i [(v_a + w_a x r_a) - (v_b + w_b x r_b)]          (A relative to B)
    G_ii = F_i (K_a(r_a) + K_b(r_b)) F_i^T,  K(r) = m^-1 I - [r]x I_w^-1 [r]x
Each Gauss-Seidel visit solves contact i's 3-D problem exactly against its Coulomb cone with the
others fixed (`contact_solver.solve_single_contact`) and applies the impulse change to the two
bodies' velocities at once, which is the dense v = G lambda + c sweep without forming the
off-diagonal blocks (O(contacts) memory and work per sweep).

Where RaiSim's material system enters (interpretations documented in docs/contact_solver.md):
- target normal velocity: the bounce (from the approach speed at the start of the step) for a
  touching contact, and depth / dt (the approach that just closes the gap) for a gap within
  the speculative margin;
- penetration is removed at the position level (`position_correction`: erp * depth per step,
  shared by inverse mass), not by a velocity bias, so it never adds kinetic energy (a
  velocity-level ERP made slow impacts bounce below the restitution threshold);
- friction coefficient interpolated from the static one by the start-of-step sliding speed.
Warm start: integrate1 copies last step's impulses to contacts with the same (pair, point)
key (`warm_start_impulse`).
"""

import jax
import jax.numpy as jnp

from raisim_jax.dynamics import contact_solver, single_body
from raisim_jax.math import rotation
from raisim_jax.types import Contacts, Model, State



def _point_velocity(linear, angular, body, r):
  return linear[body] + jnp.cross(angular[body], r)


def _point_mobility(inv_mass, inv_inertia, body, r):
  """(C, 3, 3) K(r) = m^-1 I - [r]x I_w^-1 [r]x of `body` at offsets r (world frame)."""
  skew = rotation.skew(r)
  eye = jnp.eye(3, dtype=r.dtype)
  return inv_mass[body][:, None, None] * eye - skew @ inv_inertia[body] @ skew


def warm_start_impulse(previous: Contacts, contacts: Contacts):
  """(C, 3) last step's impulse of the contact with the same key, zero if none."""
  if previous.key.shape[0] == 0 or contacts.key.shape[0] == 0:
    return jnp.zeros_like(contacts.impulse)
  same = (contacts.key[:, None] == previous.key[None, :]) & previous.active[None, :]
  same &= contacts.active[:, None]
  found = jnp.any(same, axis=1)
  source = jnp.argmax(same, axis=1)
  # Only the normal impulse is carried over: warm-starting the friction of redundant contacts
  # (four box corners) left Gauss-Seidel stalled in a creeping state that passed the
  # impulse-change threshold (1e-4 m drift in 2 s on an incline; 4e-6 with this).
  normal_only = previous.impulse[source].at[:, :2].set(0.0)
  return jnp.where(found[:, None], normal_only, 0.0)


def solve_contacts(model: Model, state: State, velocity: single_body.StepVelocity,
                   contacts: Contacts):
  """Adds contact impulses to the step velocity.

  Args:
    model: Model.
    state: State at the start of the step (poses, start-of-step velocities).
    velocity: free StepVelocity (no contacts) of this step.
    contacts: this step's contacts (from integrate1); their `impulse` is the warm start.

  Returns:
    (velocity with impulses applied, contacts with `impulse` and `inverse_apparent_inertia`,
    number of sweeps used).
  """
  dtype = model.dtype
  dt = model.time_step
  active = contacts.active
  body_a = jnp.maximum(contacts.body_a, 0)
  body_b = jnp.maximum(contacts.body_b, 0)
  com = state.bodies.position
  r_a = contacts.position - com[body_a]
  r_b = contacts.position - com[body_b]
  frame = contacts.frame

  inv_mass = single_body.inverse_mass(model)
  inv_inertia = single_body.inverse_inertia_world(model, state)
  mobility = (_point_mobility(inv_mass, inv_inertia, body_a, r_a)
              + _point_mobility(inv_mass, inv_inertia, body_b, r_b))
  delassus = frame @ mobility @ jnp.swapaxes(frame, -1, -2)
  eye = jnp.eye(3, dtype=dtype)
  delassus = jnp.where(active[:, None, None], delassus, eye)

  # Material pair properties and the targets, from the start-of-step velocities.
  shapes = model.collision.shapes
  material_a = shapes.material[jnp.maximum(contacts.shape_a, 0)]
  material_b = shapes.material[jnp.maximum(contacts.shape_b, 0)]
  props = model.solver.pair_table[material_a, material_b]
  s = state.bodies
  relative = (_point_velocity(s.linear_velocity, s.angular_velocity, body_a, r_a)
              - _point_velocity(s.linear_velocity, s.angular_velocity, body_b, r_b))
  relative = jnp.einsum("cij,cj->ci", frame, relative)
  approach_speed = -relative[:, 2]
  tangential_speed = jnp.sqrt(relative[:, 0]**2 + relative[:, 1]**2 + 1e-30)
  friction = contact_solver.static_friction_coefficient(
      props[:, 0], props[:, 3], props[:, 4], tangential_speed)
  bounce = contact_solver.bounce_velocity(props[:, 1], props[:, 2], approach_speed)
  depth = contacts.depth
  target = jnp.where(active, jnp.where(depth >= 0, bounce, depth / dt), 0.0)

  impulse0 = jnp.where(active[:, None], contacts.impulse, 0.0)

  def apply(linear, angular, i, world_impulse):
    """Adds a world-frame impulse on A (and its opposite on B) of contact i."""
    a, b = body_a[i], body_b[i]
    linear = linear.at[a].add(inv_mass[a] * world_impulse)
    angular = angular.at[a].add(inv_inertia[a] @ jnp.cross(r_a[i], world_impulse))
    linear = linear.at[b].add(-inv_mass[b] * world_impulse)
    angular = angular.at[b].add(-inv_inertia[b] @ jnp.cross(r_b[i], world_impulse))
    return linear, angular

  def apply_all(linear, angular, impulses):
    world = jnp.einsum("cji,cj->ci", frame, impulses)
    torque_a = jnp.einsum("cij,cj->ci", inv_inertia[body_a], jnp.cross(r_a, world))
    torque_b = jnp.einsum("cij,cj->ci", inv_inertia[body_b], jnp.cross(r_b, world))
    linear = linear.at[body_a].add(inv_mass[body_a][:, None] * world)
    linear = linear.at[body_b].add(-inv_mass[body_b][:, None] * world)
    angular = angular.at[body_a].add(torque_a).at[body_b].add(-torque_b)
    return linear, angular

  linear, angular = apply_all(velocity.linear, velocity.angular, impulse0)

  capacity = contacts.active.shape[0]
  order = jnp.arange(capacity)
  if model.solver.reverse_order:
    order = order[::-1]

  def visit_active(carry, i):
    linear, angular, impulses, change = carry
    a, b = body_a[i], body_b[i]
    v = frame[i] @ (linear[a] + jnp.cross(angular[a], r_a[i])
                    - linear[b] - jnp.cross(angular[b], r_b[i]))
    c_prime = v - delassus[i] @ impulses[i]
    new = contact_solver.solve_single_contact(delassus[i], c_prime, friction[i], target[i])
    delta = new - impulses[i]
    linear, angular = apply(linear, angular, i, frame[i].T @ delta)
    change = jnp.maximum(change, jnp.max(jnp.abs(delta)))
    return linear, angular, impulses.at[i].set(new), change

  def visit(carry, i):
    # Empty slots are skipped (a real skip for one world; a select under vmap).
    return jax.lax.cond(active[i], visit_active, lambda c, _: c, carry, i), None

  def sweep(carry):
    linear, angular, impulses, _, iterations = carry
    (linear, angular, impulses, change), _ = jax.lax.scan(
        visit, (linear, angular, impulses, jnp.zeros((), dtype)), order)
    return linear, angular, impulses, change, iterations + 1

  # Contacts are compacted (active slots first), so the early-exit path only visits
  # [0, num_active): a dynamic trip count, which under vmap is the batch's largest.
  num_active = jnp.sum(active.astype(jnp.int32))

  def sweep_active(carry):
    linear, angular, impulses, _, iterations = carry

    def body(k, inner):
      i = num_active - 1 - k if model.solver.reverse_order else k
      return visit_active(inner, i)

    linear, angular, impulses, change = jax.lax.fori_loop(
        0, num_active, body, (linear, angular, impulses, jnp.zeros((), dtype)))
    return linear, angular, impulses, change, iterations + 1

  start = (linear, angular, impulse0, jnp.asarray(jnp.inf, dtype), jnp.zeros((), jnp.int32))
  max_iterations = model.solver.max_iterations

  def unconverged(carry):
    return carry[3] > model.solver.threshold

  if not capacity:
    impulses, iterations = impulse0, jnp.zeros((), jnp.int32)
  elif model.solver.differentiable:
    # Fixed trip count, converged sweeps skipped by cond: reverse-mode differentiable.
    def iterate(carry, _):
      return jax.lax.cond(unconverged(carry), sweep, lambda c: c, carry), None

    (linear, angular, impulses, _, iterations), _ = jax.lax.scan(
        iterate, start, None, length=max_iterations)
  else:
    # Early exit that also pays off under vmap (the batch stops when every world converged).
    (linear, angular, impulses, _, iterations) = jax.lax.while_loop(
        lambda c: unconverged(c) & (c[4] < max_iterations) & (num_active > 0),
        sweep_active, start)
  velocity = velocity.replace(linear=linear, angular=angular)
  contacts = contacts.replace(impulse=impulses, inverse_apparent_inertia=delassus)
  return velocity, contacts, iterations


def position_correction(model: Model, contacts: Contacts):
  """(n, 3) world displacements that remove a fraction erp of each penetration.

  Each penetrating contact asks for erp * depth along its normal, split between its two bodies
  by inverse mass; a body's displacement is the mean of the requests on it (so a box resting
  on four corners moves once, not four times). Static and kinematic bodies never move."""
  inv_mass = single_body.inverse_mass(model)
  body_a = jnp.maximum(contacts.body_a, 0)
  body_b = jnp.maximum(contacts.body_b, 0)
  share = inv_mass[body_a] + inv_mass[body_b]
  push = jnp.where(contacts.active & (contacts.depth > 0) & (share > 0),
                   model.solver.erp * contacts.depth / jnp.where(share > 0, share, 1.0), 0.0)
  request = push[:, None] * contacts.normal
  n = model.num_bodies
  displacement = jnp.zeros((n, 3), request.dtype)
  displacement = displacement.at[body_a].add(inv_mass[body_a][:, None] * request)
  displacement = displacement.at[body_b].add(-inv_mass[body_b][:, None] * request)
  involved = (push > 0).astype(request.dtype)
  count = jnp.zeros((n,), request.dtype).at[body_a].add(involved).at[body_b].add(involved)
  return displacement / jnp.maximum(count, 1.0)[:, None]
