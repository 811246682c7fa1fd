"""The extension's big tables live in mappings advised for 2 MiB pages (Linux, see
`rust/src/runtime/huge_pages.rs`), and `FERROTOK_HUGE_PAGES=0` leaves the advice out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not Path("/sys/kernel/mm/transparent_hugepage").exists(),
    reason="transparent huge pages are a Linux feature this kernel lacks",
)

# Encodes a text, then prints the sizes (MiB) of the process's mappings that carry the huge
# page advice (`hg` in smaps' VmFlags), and whether numpy (which advises its own big arrays)
# was imported.
_PROBE = """
import json, sys, ferrotok
enc = ferrotok.get_encoding("o200k_base")
text = "Huge pages hold the tables. " * 1000 + "日本語の文章も少し。" * 100
assert enc.decode(enc.encode_ordinary(text)) == text
sizes, size = [], 0
for line in open("/proc/self/smaps"):
    first = line.split()[0]
    if "-" in first and not first.endswith(":"):
        a, b = (int(x, 16) for x in first.split("-"))
        size = (b - a) >> 20
    elif line.startswith("VmFlags:") and "hg" in line.split():
        sizes.append(size)
print(json.dumps([sorted(sizes), "numpy" in sys.modules]))
"""


def _advised_mappings(env_value: str | None) -> tuple[list[int], bool]:
    env = dict(os.environ)
    env.pop("FERROTOK_HUGE_PAGES", None)
    if env_value is not None:
        env["FERROTOK_HUGE_PAGES"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    sizes, numpy = json.loads(out.stdout)
    return sizes, numpy


def test_the_tables_are_advised_huge_pages() -> None:
    sizes, _ = _advised_mappings(None)
    # o200k's short-token table alone is 8 MiB.
    assert any(s >= 8 for s in sizes), sizes


def test_ferrotok_huge_pages_0_turns_the_advice_off() -> None:
    sizes, numpy = _advised_mappings("0")
    assert not numpy, "the probe should not import numpy, which advises its own arrays"
    assert sizes == [], sizes
