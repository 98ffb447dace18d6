"""Cost of one `solve_contacts` call vmapped over a batch of worlds (CPU by default).

Usage: PYTHONPATH=. python benchmarks/contact_solver_cost.py [--batch 1024]
Prints microseconds per batched solve and per world. A benchmark, not a test.
"""

import argparse
import functools
import os
import sys
import time

os.environ.setdefault('XLA_FLAGS', '--xla_cpu_multi_thread_eigen=false')

import jax  # noqa: E402

jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'tests', 'solver'))
from _problems import random_problem  # noqa: E402

from raisim_jax.dynamics import contact_solver as cs  # noqa: E402


def bench(n, iters, dtype, batch, repeats=3):
  rng = np.random.default_rng(0)
  probs = [random_problem(rng, n) for _ in range(batch)]
  args = (np.stack([p[0] for p in probs]), np.stack([p[1] for p in probs]),
          np.stack([p[2] for p in probs]), np.zeros((batch, n)), np.ones((batch, n), bool))
  args = [jnp.asarray(a, dtype) if a.dtype != bool else jnp.asarray(a) for a in args]
  fn = jax.jit(jax.vmap(functools.partial(cs.solve_contacts, max_iterations=iters)))
  jax.block_until_ready(fn(*args))
  best = np.inf
  for _ in range(repeats):
    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    best = min(best, time.perf_counter() - t)
  return best


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--batch', type=int, default=1024)
  a = parser.parse_args()
  print(f'device={jax.devices()[0]}, batch={a.batch}')
  for dtype in (jnp.float32, jnp.float64):
    for n in (4, 8):
      for iters in (20, 150):
        t = bench(n, iters, dtype, a.batch)
        print(f'{jnp.dtype(dtype).name} N={n} iters={iters}: {t * 1e3:8.2f} ms per batch, '
              f'{t / a.batch * 1e6:7.2f} us/world, '
              f'{t / a.batch / iters * 1e6:6.3f} us/world/sweep')


if __name__ == '__main__':
  main()
