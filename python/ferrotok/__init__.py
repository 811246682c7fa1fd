"""ferrotok: byte-level BPE with tiktoken's ids, faster, and able to train.

>>> import ferrotok
>>> enc = ferrotok.get_encoding("cl100k_base")
>>> enc.decode(enc.encode("hello world"))
'hello world'
"""

from . import load
from .core import Encoding
from .load import data_gym_to_mergeable_bpe_ranks, dump_tiktoken_bpe, load_tiktoken_bpe
from .model import encoding_for_model, encoding_name_for_model
from .persist import make_callable as _make_callable
from .registry import get_encoding, list_encoding_names
from .train import PieceCounts, count_pieces, train, train_from_counts

# `ferrotok.load` stays the module of file loading, and `ferrotok.load(path)` also reads an
# encoding saved with `Encoding.save`.
_make_callable(load)

__version__ = "0.1.0"

__all__ = [
    "Encoding",
    "get_encoding",
    "list_encoding_names",
    "encoding_for_model",
    "encoding_name_for_model",
    "load_tiktoken_bpe",
    "dump_tiktoken_bpe",
    "data_gym_to_mergeable_bpe_ranks",
    "train",
    "train_from_counts",
    "count_pieces",
    "PieceCounts",
    "load",
]
