"""Walks a traced program for tests that inspect what it holds."""


def equations(value):
  """Every equation of `value` (a Jaxpr or ClosedJaxpr) and of its sub-jaxprs (scan, while
  and cond bodies, custom derivative rules, checkpointed and jitted calls), depth first."""
  if hasattr(value, "eqns"):
    for eqn in value.eqns:
      yield eqn
      for param in eqn.params.values():
        yield from equations(param)
  elif hasattr(value, "jaxpr"):          # ClosedJaxpr
    yield from equations(value.jaxpr)
  elif isinstance(value, (tuple, list)):
    for item in value:
      yield from equations(item)
