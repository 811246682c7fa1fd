"""The encoding registry: names → `Encoding`, built once and shared (thread-safe).

The OpenAI encodings are built in (`openai_public.py`). Encodings that tiktoken plugins add
(modules of the `tiktoken_ext` namespace package that define `ENCODING_CONSTRUCTORS`, as
tiktoken's own `tiktoken_ext.openai_public` does) are found the first time a name is not
built in or the names are listed, so code that gets a plugin's encoding from tiktoken gets
it here too.

A registered encoding is pickled by name (a few bytes; unpickled, it shares the registered
one's tables); any other by value (`Encoding.__getstate__`).
"""

from __future__ import annotations

import copyreg
import importlib
import os
import threading
from typing import Any, Callable

from .core import Encoding
from .openai_public import ENCODING_CONSTRUCTORS, SPECS, file_url, tiktoken_file_contents

_lock = threading.RLock()
ENCODINGS: dict[str, Encoding] = {}

# tiktoken's plugin for the OpenAI encodings: built in here, from the same files.
_BUILT_IN_PLUGIN = "tiktoken_ext.openai_public"
_all_constructors: dict[str, Callable[[], dict[str, Any]]] | None = None


def get_encoding(encoding_name: str | os.PathLike[str]) -> Encoding:
    """The registered encoding called `encoding_name`, loaded on first use.

    A path that is no encoding's name loads the file there instead (each call loads it
    again): a HuggingFace `tokenizer.json` (or a directory holding one, as a model checkout
    has; see `Encoding.from_hf`), Mistral's `tekken.json` (`Encoding.from_tekken`), a
    SentencePiece `.model` file (`Encoding.from_sentencepiece`) or an encoding saved with
    `Encoding.save` (a `.tiktoken` file with its `.json` beside it).

    >>> enc = get_encoding("cl100k_base")
    >>> enc.encode("hello world")
    [15339, 1917]
    """
    if isinstance(encoding_name, os.PathLike):
        return load_path(os.fspath(encoding_name))
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = ENCODINGS.get(encoding_name)
    if enc is not None:
        return enc
    with _lock:
        if encoding_name in ENCODINGS:
            return ENCODINGS[encoding_name]
        constructor = ENCODING_CONSTRUCTORS.get(encoding_name)
        if constructor is None:
            constructor = _constructors().get(encoding_name)  # a plugin's
        if constructor is None and is_encoding_path(encoding_name):
            return load_path(encoding_name)
        if constructor is None:
            raise ValueError(
                f"Unknown encoding {encoding_name}.\n"
                f"Known encodings: {', '.join(list_encoding_names())}"
            )
        enc = _fast_load(encoding_name) or Encoding(**constructor())
        ENCODINGS[encoding_name] = enc
        return enc


def is_encoding_path(name: str) -> bool:
    """Whether `name` names a file or directory `load_path` can try (it exists)."""
    return bool(name) and os.path.exists(name)


def load_path(path: str) -> Encoding:
    """The encoding in the file at `path`: a `tokenizer.json` (by its `.json` name, or a
    directory holding one), Mistral's `tekken.json` (a `.json` that starts with its
    `config`), a SentencePiece model (by its `.model` name, or a directory holding a
    `tokenizer.model` and no `tokenizer.json`) or an encoding saved with `Encoding.save`."""
    from .sp_model import is_model_name

    if os.path.isdir(path):
        if not os.path.exists(os.path.join(path, "tokenizer.json")) and os.path.isfile(
            os.path.join(path, "tokenizer.model")
        ):
            return Encoding.from_sentencepiece(path)
        return Encoding.from_hf(path)
    if path.endswith(".json") and not _is_saved_sidecar(path):
        from .tekken import is_tekken_file

        if is_tekken_file(path):
            return Encoding.from_tekken(path)
        return Encoding.from_hf(path)
    if is_model_name(path):
        return Encoding.from_sentencepiece(path)
    return Encoding.load(path)


def _is_saved_sidecar(path: str) -> bool:
    """`x.tiktoken.json` beside `x.tiktoken`: the metadata of a saved encoding, not HF's."""
    return os.path.isfile(path[: -len(".json")]) and path[: -len(".json")].endswith(".tiktoken")


def _fast_load(name: str) -> Encoding | None:
    """The registered encoding built straight from its verified file's bytes, parsed in Rust
    (no Python dict of ranks); `None` where that path does not apply or the Rust parser
    declines the file (the Python parser then accepts it or names the bad line)."""
    spec = SPECS.get(name)
    if spec is None:
        return None
    try:
        return Encoding._from_tiktoken_contents(
            name,
            contents=tiktoken_file_contents(spec["file"]),
            source=file_url(spec["file"]),
            pat_str=spec["pat_str"],
            special_tokens=spec["special_tokens"],
            explicit_n_vocab=spec.get("explicit_n_vocab"),
        )
    except ValueError:
        return None


def list_encoding_names() -> list[str]:
    """Names that `get_encoding` accepts, in tiktoken's order."""
    return list(_constructors())


def _plugin_modules() -> list[str]:
    """The modules of the `tiktoken_ext` namespace package, in the order tiktoken finds them."""
    import pkgutil  # here, not at import: 0.7 ms that only a plugin lookup needs

    try:
        namespace = importlib.import_module("tiktoken_ext")
    except ImportError:
        return []
    modules = pkgutil.iter_modules(getattr(namespace, "__path__", []), "tiktoken_ext.")
    return [name for _, name, _ in modules]


def _constructors() -> dict[str, Callable[[], dict[str, Any]]]:
    """Encoding name → constructor, the built-in ones where tiktoken's OpenAI plugin stands
    (first when tiktoken is not installed) and every other plugin's as tiktoken finds them.

    Looked up once, as tiktoken does; as there, a plugin without `ENCODING_CONSTRUCTORS` or a
    name given twice is a ValueError, raised again on the next call.
    """
    global _all_constructors
    with _lock:
        if _all_constructors is not None:
            return _all_constructors
        modules = _plugin_modules()
        if _BUILT_IN_PLUGIN not in modules:
            modules.insert(0, _BUILT_IN_PLUGIN)
        found: dict[str, Callable[[], dict[str, Any]]] = {}
        for module_name in modules:
            constructors: dict[str, Callable[[], dict[str, Any]]] | None
            if module_name == _BUILT_IN_PLUGIN:
                constructors = ENCODING_CONSTRUCTORS
            else:
                module = importlib.import_module(module_name)
                constructors = getattr(module, "ENCODING_CONSTRUCTORS", None)
                if constructors is None:
                    raise ValueError(
                        f"tiktoken plugin {module_name} does not define ENCODING_CONSTRUCTORS"
                    )
            for name, constructor in constructors.items():
                if name in found:
                    raise ValueError(
                        f"Duplicate encoding name {name} in tiktoken plugin {module_name}"
                    )
                found[name] = constructor
        _all_constructors = found
        return found


def _pickle(enc: Encoding) -> str | tuple[Any, ...]:
    """How `pickle` and `copy` take `enc` apart: by name if it is the registered encoding of
    its name, else by value."""
    if ENCODINGS.get(enc.name) is enc:
        return _unpickle, (enc.name,)
    return enc.__reduce_ex__(2)


def _unpickle(name: str) -> Encoding:
    """A new `Encoding` object for the registered encoding `name`, sharing its state."""
    enc = Encoding.__new__(Encoding)
    enc.__dict__ = get_encoding(name).__dict__
    return enc


copyreg.pickle(Encoding, _pickle)
