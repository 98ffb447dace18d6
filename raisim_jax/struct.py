"""The one pytree-dataclass decorator used by the core, and `tree_replace` for nested edits.

`dataclass` is `flax.struct.dataclass`: fields are pytree leaves unless declared with
`static_field()`, in which case they are hashed into the jit cache key (counts, type codes,
index tables as tuples). Physical numbers are always leaves so that models can be vmapped
(domain randomization) and differentiated.
"""

from flax import struct as _flax_struct

dataclass = _flax_struct.dataclass


def static_field(**kwargs):
  """A dataclass field that is static metadata (part of the treedef), not a leaf."""
  return _flax_struct.field(pytree_node=False, **kwargs)


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
