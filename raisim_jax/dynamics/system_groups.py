"""Articulated systems of the same structure are evaluated together, under one vmap.

A world holds its systems as a tuple of per-system pytrees (Model.articulated,
State.articulated). Evaluating a per-system function in a Python loop would make the traced
step grow linearly with the number of robots; instead the systems are grouped by structure
(the ArticulatedModel's tree definition, static index tables included, and its leaves' shapes
and dtypes), each group's inputs are stacked along a new leading axis and the function runs
once under `jax.vmap`. Four identical quadrupeds trace one quadruped; a quadruped and an arm
trace two. Results come back as a per-system tuple in the original order.
"""

import jax
import jax.numpy as jnp
import numpy as np


def structure_key(system_model):
  """Hashable key: systems with equal keys can be stacked and vmapped together."""
  leaves, treedef = jax.tree.flatten(system_model)
  return treedef, tuple((np.shape(leaf), jnp.result_type(leaf)) for leaf in leaves)


def structure_groups(systems):
  """[[system indices]] with equal structure_key, in order of first appearance."""
  groups = {}
  for index, system_model in enumerate(systems):
    groups.setdefault(structure_key(system_model), []).append(index)
  return list(groups.values())


def map_systems(fn, systems, *per_system):
  """(fn(systems[s], *(arg[s] for arg in per_system)) for each system s), as a tuple.

  systems: tuple of ArticulatedModel; per_system: tuples (one entry per system) of pytrees
  whose leaves have the same shapes within a structure group. Systems alone in their group
  are called directly; a group of several is stacked and evaluated by one vmapped call."""
  results = [None] * len(systems)
  for members in structure_groups(systems):
    if len(members) == 1:
      s = members[0]
      results[s] = fn(systems[s], *(arg[s] for arg in per_system))
      continue
    inputs = [(systems[s],) + tuple(arg[s] for arg in per_system) for s in members]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *inputs)
    out = jax.vmap(fn)(*stacked)
    for position, s in enumerate(members):
      results[s] = jax.tree.map(lambda x, p=position: x[p], out)
  return tuple(results)
