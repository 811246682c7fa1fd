"""Every Python example in README.md runs as written: each ```python block is executed on its
own, in a fresh namespace and an empty working directory (the encoding files come from
FERROTOK_DATA_DIR, as the README's set-up says). A block that imports torch needs the `nn`
extra."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 3
    assert python_blocks("```python\nx = 1\n```\n```sh\nls\n```\n") == ["x = 1\n"]


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if re.search(r"^\s*(import|from) torch\b", code, flags=re.MULTILINE):
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
