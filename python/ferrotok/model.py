"""Which encoding a model uses: tiktoken 0.14's tables and lookup, unchanged.

An exact name is looked up first (`MODEL_TO_ENCODING`), then the prefixes
(`MODEL_PREFIX_TO_ENCODING`) in table order; the first prefix that matches wins. Prefix matching
means new model versions (`gpt-4o-2024-08-06`) work without an update, and also that made-up
names with a known prefix (`gpt-4-FAKE`) match.

>>> encoding_name_for_model("gpt-4o")
'o200k_base'
>>> encoding_name_for_model("gpt-3.5-turbo-0613")
'cl100k_base'
"""

from __future__ import annotations

from .core import Encoding
from .registry import get_encoding

__all__ = [
    "MODEL_PREFIX_TO_ENCODING",
    "MODEL_TO_ENCODING",
    "encoding_for_model",
    "encoding_name_for_model",
]

# Order matters: the first matching prefix wins (e.g. "gpt-4o-" before "gpt-4-").
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    # reasoning
    "o1-": "o200k_base",
    "o3-": "o200k_base",
    "o4-mini-": "o200k_base",
    # chat
    "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base",
    "gpt-4.1-": "o200k_base",
    "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base",  # e.g. gpt-4o-2024-05-13
    "gpt-4-": "cl100k_base",  # e.g. gpt-4-0314, gpt-4-32k
    "gpt-3.5-turbo-": "cl100k_base",  # e.g. gpt-3.5-turbo-0301
    "gpt-35-turbo-": "cl100k_base",  # Azure deployment name
    "gpt-oss-": "o200k_harmony",
    # fine-tuned
    "ft:gpt-4o": "o200k_base",
    "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base",
    "ft:babbage-002": "cl100k_base",
}

MODEL_TO_ENCODING: dict[str, str] = {
    # reasoning
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    # chat
    "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-3.5": "cl100k_base",  # common shorthand
    "gpt-35-turbo": "cl100k_base",  # Azure deployment name
    # base
    "davinci-002": "cl100k_base",
    "babbage-002": "cl100k_base",
    # embeddings
    "text-embedding-ada-002": "cl100k_base",
    "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    # DEPRECATED MODELS
    # text (deprecated)
    "text-davinci-003": "p50k_base",
    "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base",
    "text-curie-001": "r50k_base",
    "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base",
    "davinci": "r50k_base",
    "curie": "r50k_base",
    "babbage": "r50k_base",
    "ada": "r50k_base",
    # code (deprecated)
    "code-davinci-002": "p50k_base",
    "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base",
    "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base",
    "cushman-codex": "p50k_base",
    # edit (deprecated)
    "text-davinci-edit-001": "p50k_edit",
    "code-davinci-edit-001": "p50k_edit",
    # old embeddings (deprecated)
    "text-similarity-davinci-001": "r50k_base",
    "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base",
    "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base",
    "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base",
    "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base",
    "code-search-ada-code-001": "r50k_base",
    # open source
    "gpt2": "gpt2",
    "gpt-2": "gpt2",  # consistent with gpt-4
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding a model uses.

    Raises `KeyError` (with tiktoken's message, naming `ferrotok.get_encoding`) if the name is
    not recognised.

    >>> encoding_name_for_model("gpt-4")
    'cl100k_base'
    >>> encoding_name_for_model("ft:gpt-4o-mini:org::id")
    'o200k_base'
    >>> encoding_name_for_model("llama")
    Traceback (most recent call last):
    ...
    KeyError: 'Could not automatically map llama to a tokeniser. Please use `ferrotok.get_encoding` to explicitly get the tokeniser you expect.'
    """  # noqa: E501
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for model_prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(model_prefix):
            return encoding_name
    # tiktoken's message, but naming ferrotok's function: its first sentence, which code
    # may match on, is word for word tiktoken's.
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `ferrotok.get_encoding` to explicitly get the tokeniser you expect."
    ) from None


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding a model uses (loaded on first use, then shared).

    Raises `KeyError` if the model name is not recognised.

    >>> encoding_for_model("gpt-4").name
    'cl100k_base'
    >>> encoding_for_model("gpt-4").encode("hello world")
    [15339, 1917]
    """
    return get_encoding(encoding_name_for_model(model_name))
