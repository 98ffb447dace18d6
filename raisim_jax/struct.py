"""The one pytree-dataclass decorator used by the core, and `tree_replace` for nested edits.

`dataclass` makes a frozen dataclass with a `replace(**fields)` method and registers it with
`jax.tree_util.register_dataclass`: fields are pytree leaves unless declared with
`static_field()`, in which case they are part of the treedef and hashed into the jit cache
key (counts, type codes, index tables as tuples). Physical numbers are always leaves so that
models can be vmapped (domain randomization) and differentiated.

This is what `flax.struct.dataclass` does (the same treedefs), without importing flax: its
package import pulls in flax.linen, half of `import raisim_jax` (0.25 of 0.5 s), paid by
every script and every test process.
"""

import dataclasses

import jax

_STATIC = "raisim_jax_static"   # field metadata key of static (treedef) fields


def dataclass(cls):
  """`cls` as a frozen dataclass registered as a pytree: leaves are its fields in
  declaration order, except the `static_field()` ones, which are treedef metadata."""
  cls = dataclasses.dataclass(frozen=True)(cls)
  fields = dataclasses.fields(cls)
  jax.tree_util.register_dataclass(
      cls, data_fields=[f.name for f in fields if not f.metadata.get(_STATIC)],
      meta_fields=[f.name for f in fields if f.metadata.get(_STATIC)])
  cls.replace = _replace
  return cls


def _replace(self, **updates):
  """A copy with the named fields replaced (the object itself is frozen)."""
  return dataclasses.replace(self, **updates)


def static_field(**kwargs):
  """A dataclass field that is static metadata (part of the treedef), not a leaf."""
  return dataclasses.field(metadata={_STATIC: True}, **kwargs)


def tree_replace(tree, updates):
  """`tree` with the leaves or subtrees named by dotted paths replaced (the pytree is not
  modified): `tree_replace(state, {"bodies.position": p, "articulated.0.p_target": q})`.
  A path step is a dataclass field name, or an index into a tuple.

  Raises:
    KeyError: naming the first path step that does not exist.
  """
  for path, value in updates.items():
    tree = _replace_path(tree, path.split("."), value, path)
  return tree


def _replace_path(node, steps, value, path):
  if not steps:
    return value
  head, rest = steps[0], steps[1:]
  if isinstance(node, tuple):
    if not head.lstrip("-").isdigit() or not -len(node) <= int(head) < len(node):
      raise KeyError(f"tree_replace: '{path}': '{head}' is not an index of a tuple of "
                     f"{len(node)} entries")
    items = list(node)
    items[int(head)] = _replace_path(items[int(head)], rest, value, path)
    return tuple(items)
  if not hasattr(node, "replace") or head not in getattr(node, "__dataclass_fields__", {}):
    raise KeyError(f"tree_replace: '{path}': {type(node).__name__} has no field '{head}'")
  return node.replace(**{head: _replace_path(getattr(node, head), rest, value, path)})
