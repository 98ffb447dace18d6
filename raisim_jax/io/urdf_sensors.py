"""Sensor sets attached to URDF links (`<link name="..." sensor="set.xml">`).

Spec (articulated_systems.txt, "URDF loader details"): the attribute loads a sensor set XML
and instantiates sensors of type rgb, depth, imu or spinning_lidar; the set's `update_rate`
applies to each sensor. raisim_jax reads and checks the set and stores one `SensorSpec` per
sensor on its link (`ArticulatedDescription.sensors`), for the sensors work; it does not
simulate them yet, and says so once per system when it loads one.

A sensor is an element of the set whose tag or `type` attribute is one of the four types;
its `name`, `update_rate` (else the set's) and `pos` / `rpy` or `quat` (its pose in the link
frame) are read, the other attributes kept as strings.
"""

import dataclasses
import os
import re

import numpy as np
from lxml import etree

SENSOR_TYPES = ("rgb", "depth", "imu", "spinning_lidar")


@dataclasses.dataclass
class SensorSpec:
  link: str
  type: str
  name: str
  update_rate: float
  pos: np.ndarray
  attributes: dict
  file: str


def _numbers(text, where, name, count):
  try:
    values = [float(v) for v in re.split(r"[\s,]+", text.strip()) if v]
  except ValueError:
    raise ValueError(f"{where}: attribute '{name}': '{text}' is not a list of numbers") \
        from None
  if len(values) != count or not np.all(np.isfinite(values)):
    raise ValueError(f"{where}: attribute '{name}' needs {count} finite numbers, got '{text}'")
  return np.asarray(values)


def read_sensor_set(path, link):
  """[SensorSpec] of the sensor set file `path` attached to `link`.

  Raises:
    FileNotFoundError: no such file.
    ValueError: malformed XML, no sensor in it, an unknown sensor type, a bad number; naming
      the file and line.
  """
  try:
    root = etree.parse(path, etree.XMLParser(remove_comments=True)).getroot()
  except OSError:
    raise FileNotFoundError(f"sensor set '{path}' of link '{link}' not found") from None
  except etree.XMLSyntaxError as error:
    raise ValueError(f"{path}: malformed XML (line {error.lineno}): {error.msg}") from None
  default_rate = root.get("update_rate")
  sensors = []
  for element in root.iter():
    if not isinstance(element.tag, str):
      continue
    kind = element.get("type", element.tag if element.tag in SENSOR_TYPES else None)
    if kind is None:
      continue
    where = f"{path}, line {element.sourceline}, <{element.tag}>"
    if kind not in SENSOR_TYPES:
      raise ValueError(f"{where}: unknown sensor type '{kind}' (one of "
                       f"{', '.join(SENSOR_TYPES)})")
    rate_text = element.get("update_rate", default_rate)
    rate = float(_numbers(rate_text, where, "update_rate", 1)[0]) if rate_text else 0.0
    if rate < 0:
      raise ValueError(f"{where}: update_rate must not be negative, got {rate}")
    pos = _numbers(element.get("pos", "0 0 0"), where, "pos", 3)
    sensors.append(SensorSpec(link=link, type=kind, name=element.get("name", ""),
                              update_rate=rate, pos=pos, attributes=dict(element.attrib),
                              file=os.path.abspath(path)))
  if not sensors:
    raise ValueError(f"{path}: no sensor ({', '.join(SENSOR_TYPES)}) in the sensor set of "
                     f"link '{link}'")
  return sensors
