"""contact_heads: the heads of a contact buffer and the tables that map a tier (the smallest
head holding every world's contacts) to a traced branch."""

import numpy as np

from raisim_jax import contact_heads


def test_head_sizes_and_their_branch_tables():
  """A robot's buffer (168 slots): heads 0, 4, 8 and a quarter (48); the small heads share a
  branch where asked. A 12-slot buffer has only the head of 4; an empty one none. The last
  entry of every table is the whole buffer's branch."""
  assert contact_heads.head_sizes(168) == (0, 4, 8, 48)
  assert contact_heads.head_sizes(12) == (0, 4)
  assert contact_heads.head_sizes(0) == ()
  heads = contact_heads.head_sizes(168)
  shared = contact_heads.grouped(heads, share_small=True)
  alone = contact_heads.grouped(heads, share_small=False)
  assert shared == [(0,), (4, 8), (48,)]
  assert alone == [(0,), (4,), (8,), (48,)]
  assert np.array_equal(contact_heads.branch_of_tier(shared), [0, 1, 1, 2, 3])
  assert np.array_equal(contact_heads.branch_of_tier(alone), [0, 1, 2, 3, 4])
  assert contact_heads.grouped((0, 4), share_small=True) == [(0,), (4,)]
  assert contact_heads.grouped((), share_small=True) == []
  assert np.array_equal(contact_heads.branch_of_tier([]), [0])
