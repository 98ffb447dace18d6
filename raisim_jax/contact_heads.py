"""Heads of the contact buffer: the leading slots that hold every world's contacts.

The contact buffer is active-first (`collision.detection.detect_contacts` compacts into it),
so where every world of a batch has at most `h` contacts, work on the buffer's first `h`
slots is the work on the whole buffer. Detection compacts into the smallest such head and
leaves the rest empty; the forward-only solve runs on it (`dynamics.contact_dynamics`). The
choice is one `switch` for the whole batch (`tier`), never a per-world select.
"""

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import batched_cond

SMALL_HEADS = (4, 8)   # contact slots of the small heads: one legged robot's feet, a lying humanoid


def head_sizes(capacity: int) -> tuple:
  """Static, increasing numbers of leading contact slots, all below `capacity`: 0 (no world
  has a contact: the solve has only joint-limit and pin rows), a quarter of the buffer (at
  least 16 slots, a multiple of 8), and between them SMALL_HEADS where each is at most half
  the quarter. The zero head made 1,024 worlds of 9 bodies falling through the air 26%
  faster (85.8k -> 108k world-steps/s on one core: they had solved 8 empty slots); the head
  of 4 a standing quadruped (4 feet on the ground) 15-26% faster than the head of 8
  (interleaved runs, one core, batch 1,024)."""
  quarter = max(16, -(-capacity // 32) * 8)
  sizes = [quarter] if quarter < capacity else []
  smallest_above = min(sizes + [capacity])
  small = [size for size in SMALL_HEADS if 2 * size <= smallest_above]
  return ((0,) if capacity else ()) + tuple(small + sizes)


def grouped(heads, share_small: bool):
  """`heads` as consecutive groups, one per traced branch: the zero head, then the small
  heads together when `share_small` (one branch serves them all: its slots past the
  contacts are empty), then every other head alone."""
  small = tuple(h for h in heads if 0 < h <= max(SMALL_HEADS))
  shared = small if share_small else ()
  return ([(h,) for h in heads if h == 0] + [shared] * bool(shared)
          + [(h,) for h in heads if h > 0 and h not in shared])


def branch_of_tier(groups):
  """(tiers + 1,) int32: the branch of each `tier` of the heads in `groups` (`grouped`),
  and past them len(groups), the branch of the whole buffer."""
  return jnp.asarray([k for k, sizes in enumerate(groups) for _ in sizes] + [len(groups)],
                     jnp.int32)


def tier(extent, heads):
  """() int32 index of the smallest of `heads` that is not below `extent` in any world
  (len(heads): none is), unbatched under vmap (`batched_cond.any_world`), so a `switch` on it
  runs one branch for the whole batch."""
  return sum(batched_cond.any_world(extent > head).astype(jnp.int32) for head in heads)


def leading(buffer, size: int):
  """The first `size` slots of every leaf of a buffer pytree (Contacts; scalar leaves such as
  `overflow` unchanged)."""
  return jax.tree.map(lambda x: x[:size] if np.ndim(x) else x, buffer)


def with_leading(whole, part):
  """`whole` (a buffer pytree) with its leading slots replaced by those of `part` (the same
  structure, fewer slots); scalar leaves are `part`'s."""
  return jax.tree.map(lambda w, p: jnp.asarray(w).at[:p.shape[0]].set(p) if np.ndim(w) else p,
                      whole, part)
