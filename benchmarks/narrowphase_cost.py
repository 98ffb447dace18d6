"""Cost of one narrowphase pair call under jit(vmap) on this machine (microseconds per pair).

    python benchmarks/narrowphase_cost.py [--batch 1024] [--repeats 20] [--dtype float32]
        [--pairs box-cylinder ...]

Random near-touching poses (tests/collision/oracle.py's generator needs scipy; numpy only here);
mesh shapes are random 64-vertex hulls.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.collision import narrowphase as nph
from raisim_jax.collision.shapes import Hull, ShapeType
from raisim_jax.io import collision_mesh

NAMES = {t.name.lower(): t for t in ShapeType}


def _random_rotations(rng, n):
  q = rng.normal(size=(n, 4))
  q /= np.linalg.norm(q, axis=1, keepdims=True)
  w, x, y, z = q.T
  return np.stack([
      np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
      np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
      np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


def _hulls(rng, n, vertices=64):
  """A Hull of n rows: 8 distinct random hulls (64 points on ellipsoids with semi-axes
  0.2-0.5 m, kept whole by io/collision_mesh.py) tiled, as a CoACD part or a robot link."""
  clouds = []
  for _ in range(8):
    points = rng.normal(size=(vertices, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    clouds.append(collision_mesh.convex_hull(points * rng.uniform(0.2, 0.5, 3)))
  table_vertices, table_planes, table_triangles = collision_mesh.hull_tables(clouds)
  rows = np.arange(n) % 8
  return Hull(table_vertices[rows], table_planes[rows], table_triangles[rows])


def _sizes(t, rng, n):
  if t == ShapeType.MESH:
    return _hulls(rng, n)
  if t == ShapeType.BOX:
    return np.concatenate([rng.uniform(0.3, 1.0, (n, 3)), np.zeros((n, 1))], 1)
  if t == ShapeType.HALFSPACE:
    return np.zeros((n, 4))
  return np.concatenate([rng.uniform(0.2, 0.5, (n, 1)), rng.uniform(0.3, 1.0, (n, 1)),
                         np.zeros((n, 2))], 1)


def measure(ta, tb, batch, dtype, repeats=20):
  rng = np.random.default_rng(0)
  args = [_sizes(ta, rng, batch), _random_rotations(rng, batch), rng.uniform(-0.3, 0.3, (batch, 3)),
          _sizes(tb, rng, batch), _random_rotations(rng, batch), np.zeros((batch, 3))]
  if tb == ShapeType.HALFSPACE:
    args[4] = np.broadcast_to(np.eye(3), (batch, 3, 3))
  args = [jax.tree.map(lambda x: jnp.asarray(x, dtype if np.issubdtype(x.dtype, np.floating)
                                            else x.dtype), a) for a in args]
  fn = jax.jit(jax.vmap(lambda *a: nph.collide(ta, tb, *a)))
  t0 = time.perf_counter()
  jax.block_until_ready(fn(*args))
  compile_s = time.perf_counter() - t0
  t0 = time.perf_counter()
  for _ in range(repeats):
    jax.block_until_ready(fn(*args))
  per_pair_us = (time.perf_counter() - t0) / repeats / batch * 1e6
  return compile_s, per_pair_us


def main(argv=None):
  """Prints and returns [(pair name, us per pair, compile s)] for the pairs asked."""
  parser = argparse.ArgumentParser()
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--dtype", default="float32")
  parser.add_argument("--pairs", nargs="*", default=[
      "sphere-sphere", "box-box", "box-halfspace", "box-capsule", "box-cylinder", "box-cone",
      "cylinder-cylinder", "cylinder-cone", "cone-cone", "mesh-halfspace", "sphere-mesh",
      "box-mesh", "mesh-mesh"])
  args = parser.parse_args(argv)
  if args.dtype == "float64":
    jax.config.update("jax_enable_x64", True)
  dtype = jnp.dtype(args.dtype)
  print(f"batch {args.batch}, {args.dtype}, {jax.devices()[0].platform}")
  rows = []
  for name in args.pairs:
    a, b = name.split("-")
    compile_s, us = measure(NAMES[a], NAMES[b], args.batch, dtype, args.repeats)
    print(f"{name:20s} {us:8.2f} us/pair   compile {compile_s:5.1f} s")
    rows.append((name, us, compile_s))
  return rows


if __name__ == "__main__":
  main()
