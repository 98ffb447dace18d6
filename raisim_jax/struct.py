"""The one pytree-dataclass decorator used by the core.

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
