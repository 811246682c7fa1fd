"""ferrotok: byte-level BPE with tiktoken's ids, faster, and able to train.

Where everything is (docs/architecture.md has the whole map and its dependency rules):

- `core` (`Encoding`), `registry` (`get_encoding`), `openai_public` (OpenAI's encodings),
  `model` (model name → encoding): encoding, with the Rust engine in `_core`;
- `load` (tiktoken's `.tiktoken` reading and writing), `files` (where files are kept, atomic
  writes), `persist` (`Encoding.save` / `Encoding.load`'s format);
- `hf_json`, `sp_model`, `tekken` (a `tokenizer.json`, a SentencePiece `.model`, Mistral's
  `tekken.json`): other models' files; `hf/` (HuggingFace's face, `to_hf`, `transformers`);
- `train` (counting pieces, merging): training a vocabulary;
- `cli/` (the `ferrotok` command, a module per subcommand), `demo` (`python -m ferrotok.demo`);
- `nn/` (torch modules for a model's front), `data` (sequences for training a model).

>>> import ferrotok
>>> enc = ferrotok.get_encoding("cl100k_base")
>>> enc.decode(enc.encode("hello world"))
'hello world'
"""

from . import load
from .compat import make_load_callable
from .core import Encoding
from .load import data_gym_to_mergeable_bpe_ranks, dump_tiktoken_bpe, load_tiktoken_bpe
from .model import encoding_for_model, encoding_name_for_model
from .registry import get_encoding, list_encoding_names
from .train import PieceCounts, count_pieces, train, train_from_counts

make_load_callable(load)  # `ferrotok.load(path)`: see `ferrotok.compat`
del make_load_callable

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
