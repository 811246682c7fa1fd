"""Loading a SentencePiece `.model` file as an `Encoding` (`Encoding.from_sentencepiece`).

What it promises: for a file it admits, `encode_ordinary(text)` is
`sentencepiece.SentencePieceProcessor(model_file=path).encode(text)` and `decode(ids)` its
`decode(ids)`. It admits BPE models (Llama 1 and 2, Mistral's v1 to v7 files, Gemma's layout
without a dummy prefix) and Unigram models (sentencepiece's default type), any normalization
rule (`identity`, or a precompiled charsmap such as `nmt_nfkc`), spaces made `▁`
(`escape_whitespaces`), extra whitespace kept or removed, `▁` in front of a text or not
(`add_dummy_prefix`), byte fallback or not, pieces of the types normal, unknown, control,
user-defined (BPE only) and byte. Anything else in a file is refused with a `ValueError`
naming it, never tokenized differently: model types word and char,
`treat_whitespace_as_suffix`, unused pieces, scores that are no number, user-defined symbols
in a Unigram model, holding a space or beside a charsmap.

How: the file's protocol buffer (`ModelProto` of sentencepiece's `sentencepiece_model.proto`)
is read here, without `protobuf`; the `tokenizer.json` whose ids are sentencepiece's (the
layout transformers' Llama converter writes: `Prepend("▁")` and `Replace(" ", "▁")`, after
the rule's `Precompiled` and `Replace`s that remove extra whitespace where the file says so, no
pre-tokenizer, BPE whose merges are every split of a piece into two pieces, ranked by the
piece's score; or Unigram over the pieces and their scores) is built from it and loaded as
`Encoding.from_hf` loads one. A Unigram model carries ferrotok's own key
`ferrotok_sentencepiece`, for sentencepiece's arithmetic over the whole text
(`rust/src/pipeline/unigram.rs`), where HF's sums differ on near-ties. Its control
pieces are special tokens, `<s>` put in front by `add_special_tokens=True` as HF's Llama files
do; the unknown piece is an ordinary token (sentencepiece matches neither in text), decoded as
sentencepiece's ` ⁇ ` (a decoder `Replace`). User-defined symbols are added tokens matched in
the normalized text as they are, which HF's files cannot say (ferrotok's own key,
`ferrotok_verbatim`). A charsmap is read as sentencepiece reads it (the same key on
`Precompiled`). `to_hf` refuses a model that needs one of these keys, and writes the others.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .hf_json import added_token, file_or_inner, template

# `ModelProto.SentencePiece.Type`.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# `TrainerSpec.ModelType`.
UNIGRAM, BPE = 1, 2
_MODEL_TYPES = {UNIGRAM: "UNIGRAM", BPE: "BPE", 3: "WORD", 4: "CHAR"}
META = "\u2581"


class _Reader:
    """The fields of one protocol buffer message, in order: (number, wire type, value), the
    value an int (varint, fixed32, fixed64) or the bytes of a length-delimited field."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.what = data, what

    def _bad(self, why: str) -> ValueError:
        return ValueError(f"not a SentencePiece model file ({self.what}: {why})")

    def _varint(self, i: int) -> tuple[int, int]:
        value, shift, data = 0, 0, self.data
        while True:
            if i >= len(data) or shift > 63:
                raise self._bad("a number runs past its end")
            b = data[i]
            value |= (b & 0x7F) << shift
            i += 1
            if b < 0x80:
                return value, i
            shift += 7

    def fields(self) -> Iterator[tuple[int, int, Any]]:
        i, data = 0, self.data
        while i < len(data):
            key, i = self._varint(i)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise self._bad("field number 0")
            value: Any
            if wire == 0:
                value, i = self._varint(i)
            elif wire == 1:
                if i + 8 > len(data):
                    raise self._bad("a field runs past its end")
                value, i = int.from_bytes(data[i : i + 8], "little"), i + 8
            elif wire == 5:
                if i + 4 > len(data):
                    raise self._bad("a field runs past its end")
                value, i = int.from_bytes(data[i : i + 4], "little"), i + 4
            elif wire == 2:
                n, i = self._varint(i)
                if i + n > len(data):
                    raise self._bad("a field runs past its end")
                value, i = data[i : i + n], i + n
            else:
                raise self._bad(f"wire type {wire}")
            yield number, wire, value


def _int32(v: int) -> int:
    """A varint read as protobuf's int32 (negative numbers are sign-extended to 64 bits)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


# The wire type of each field this module reads (protobuf: 0 varint, 2 bytes, 5 fixed32), so
# that a corrupt file is refused by name instead of a number meeting code that wants bytes.
_VARINT, _BYTES, _FIXED32 = 0, 2, 5
_WIRES = {
    "TrainerSpec": {3: _VARINT, 24: _VARINT, 35: _VARINT, 41: _VARINT, 42: _VARINT, 44: _BYTES},
    "NormalizerSpec": {1: _BYTES, 2: _BYTES, 3: _VARINT, 4: _VARINT, 5: _VARINT},
    "denormalizer_spec": {1: _BYTES, 2: _BYTES, 3: _VARINT, 4: _VARINT, 5: _VARINT},
    "SentencePiece": {1: _BYTES, 2: _FIXED32, 3: _VARINT},
}


def _scalars(data: bytes, what: str) -> dict[int, Any]:
    """A message of scalar fields: the last value of each field number; a field read here that
    has another wire type than its schema's is refused."""
    reader, wires, out = _Reader(data, what), _WIRES[what], dict[int, Any]()
    for n, wire, v in reader.fields():
        if wires.get(n, wire) != wire:
            raise reader._bad(f"field {n} has wire type {wire}, not {wires[n]}")
        out[n] = v
    return out


class ModelFile:
    """What a `.model` file says that encoding reads: its pieces (text, score, type) and the
    trainer's and normalizer's fields by number, with protobuf's defaults where absent."""

    def __init__(self, data: bytes) -> None:
        self.pieces: list[tuple[str, float, int]] = []
        trainer: dict[int, Any] = {}
        normalizer: dict[int, Any] = {}
        self.denormalizer: dict[int, Any] | None = None
        reader = _Reader(data, "ModelProto")
        for number, wire, value in reader.fields():
            if wire != 2:
                if number in (1, 2, 3, 5):
                    raise reader._bad(f"field {number} is not a message")
                continue
            if number == 1:
                self.pieces.append(self._piece(value))
            elif number == 2:
                trainer.update(_scalars(value, "TrainerSpec"))
            elif number == 3:
                normalizer.update(_scalars(value, "NormalizerSpec"))
            elif number == 5:
                self.denormalizer = _scalars(value, "denormalizer_spec")
        if not self.pieces:
            raise ValueError("not a SentencePiece model file (no pieces)")
        self.model_type: int = trainer.get(3, 1)
        self.byte_fallback = bool(trainer.get(35, 0))
        self.treat_whitespace_as_suffix = bool(trainer.get(24, 0))
        surface = bytes(trainer.get(44, " \u2047 ".encode()))
        self.unk_surface = surface.decode("utf-8", "replace")
        self.bos_id = _int32(trainer.get(41, 1))
        self.eos_id = _int32(trainer.get(42, 2))
        self.normalizer_name = bytes(normalizer.get(1, b"")).decode("utf-8", "replace")
        self.charsmap = bytes(normalizer.get(2, b""))
        self.add_dummy_prefix = bool(normalizer.get(3, 1))
        self.remove_extra_whitespaces = bool(normalizer.get(4, 1))
        self.escape_whitespaces = bool(normalizer.get(5, 1))

    @staticmethod
    def _piece(data: bytes) -> tuple[str, float, int]:
        fields = _scalars(data, "SentencePiece")
        try:
            text = bytes(fields.get(1, b"")).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not a SentencePiece model file (a piece is not UTF-8)") from None
        score = struct.unpack("<f", int(fields.get(2, 0)).to_bytes(4, "little"))[0]
        return text, float(score), int(fields.get(3, NORMAL))


def _refuse(what: str) -> ValueError:
    return ValueError(
        f"SentencePiece model: {what} is not supported by ferrotok (yet); refusing rather than "
        "tokenizing differently from sentencepiece"
    )


def _check(m: ModelFile) -> None:
    """Refuses, by name, what this module does not turn into sentencepiece's ids."""
    if m.model_type not in (UNIGRAM, BPE):
        name = _MODEL_TYPES.get(m.model_type, str(m.model_type))
        raise _refuse(f"model type {name}")
    user_defined = any(k == USER_DEFINED for _, _, k in m.pieces)
    if m.model_type == UNIGRAM and user_defined:
        # sentencepiece's Unigram finds them in its trie with a score of their own, where its
        # BPE matches them before the model (as added tokens are matched here).
        raise _refuse("user-defined symbols in a Unigram model")
    if m.charsmap and user_defined:
        # sentencepiece leaves a user-defined symbol of the raw text unnormalized; here it
        # would be looked for in the normalized text.
        raise _refuse(
            f"user-defined symbols with the normalization rule {m.normalizer_name!r} "
            "(a precompiled charsmap)"
        )
    if m.denormalizer is not None and m.denormalizer.get(2):
        raise _refuse("a denormalization rule")
    if not m.escape_whitespaces:
        raise _refuse("escape_whitespaces=false")
    if m.treat_whitespace_as_suffix:
        raise _refuse("treat_whitespace_as_suffix")
    unused = [t for t, _, k in m.pieces if k == UNUSED]
    if unused:
        shown = ", ".join(repr(t) for t in unused[:3])
        raise _refuse(f"{len(unused)} unused pieces ({shown}...)")
    spaced = [t for t, _, k in m.pieces if k == USER_DEFINED and " " in t]
    if spaced:
        raise _refuse(f"the user-defined symbol {spaced[0]!r} holding a space")
    unscored = [(t, s) for t, s, _ in m.pieces if not math.isfinite(s)]
    if unscored:
        raise _refuse(f"the score {unscored[0][1]} of the piece {unscored[0][0]!r}")
    types = [k for _, _, k in m.pieces if not NORMAL <= k <= BYTE]
    if types:
        raise _refuse(f"piece type {types[0]}")
    seen: set[str] = set()
    for text, _, _ in m.pieces:
        if text in seen:
            raise ValueError(f"not a SentencePiece model file (the piece {text!r} twice)")
        seen.add(text)
    unknown_pieces = [t for t, _, k in m.pieces if k == UNKNOWN]
    if len(unknown_pieces) != 1 or not unknown_pieces[0]:
        raise ValueError("not a SentencePiece model file (it needs exactly one unknown piece)")
    # Decoding writes the unknown piece as its surface by replacing its text in each token.
    holding = [t for t, _, k in m.pieces if k != UNKNOWN and unknown_pieces[0] in t]
    if holding:
        raise _refuse(f"the piece {holding[0]!r} holding the unknown piece's text")
    byte_pieces = {t for t, _, k in m.pieces if k == BYTE}
    if m.byte_fallback and len(byte_pieces) != 256:
        raise ValueError(
            f"not a SentencePiece model file (byte fallback with {len(byte_pieces)} byte pieces)"
        )


def tokenizer_json(m: ModelFile) -> dict[str, Any]:
    """The `tokenizer.json` whose HF ids are sentencepiece's for `m` (checked by `_check`)."""
    _check(m)
    vocab = {text: i for i, (text, _, _) in enumerate(m.pieces)}
    unk = next(text for text, _, k in m.pieces if k == UNKNOWN)
    model = _bpe(m, vocab, unk) if m.model_type == BPE else _unigram(m)
    added = [
        added_token(i, text, special=True, normalized=False)
        for i, (text, _, kind) in enumerate(m.pieces)
        if kind == CONTROL and text
    ]
    # User-defined symbols: sentencepiece matches them (leftmost, longest) in the normalized
    # text, `▁` in front of its first part alone, and merges nothing across them. As HF's
    # normalized added tokens they are matched there too, but HF would normalize their text
    # first (`[REF]` to `▁[REF]`): ferrotok's own key keeps it (`added_tokens.rs`).
    added += [
        {**added_token(i, text, special=False, normalized=True), "ferrotok_verbatim": True}
        for i, (text, _, kind) in enumerate(m.pieces)
        if kind == USER_DEFINED and text
    ]
    steps: list[dict[str, Any]] = []
    if m.charsmap:
        # The rule's table (`nmt_nfkc`, ...), as HF's converters write it, read as
        # sentencepiece reads it (ferrotok's own key, `rust/src/pipeline/precompiled.rs`:
        # the longest match from each char on, where HF maps a grapheme cluster by its
        # shortest prefix).
        charsmap = base64.b64encode(m.charsmap).decode("ascii")
        steps.append(
            {
                "type": "Precompiled",
                "precompiled_charsmap": charsmap,
                "ferrotok_sentencepiece": True,
            }
        )
    if m.remove_extra_whitespaces:
        # sentencepiece's normalizer then writes no space after a space, none in front and
        # none at the end, where it also drops a `▁` of the text's own (its last loop takes
        # off every trailing `▁`, spaces being `▁` by then). The spaces are those the rule
        # writes: its runs made one, the one in front dropped, the trailing run of spaces and
        # `▁`s dropped.
        steps += [
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            {"type": "Replace", "pattern": {"Regex": "\\A "}, "content": ""},
            {"type": "Replace", "pattern": {"Regex": "[ \u2581]+\\z"}, "content": ""},
        ]
    if m.add_dummy_prefix:
        steps.append({"type": "Prepend", "prepend": META})
    steps.append({"type": "Replace", "pattern": {"String": " "}, "content": META})
    decoders: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": unk}, "content": m.unk_surface},
        {"type": "Replace", "pattern": {"String": META}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if m.add_dummy_prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": steps},
        "pre_tokenizer": None,
        "post_processor": _bos_template(m),
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": model,
    }


def _bpe(m: ModelFile, vocab: dict[str, int], unk: str) -> dict[str, Any]:
    """The BPE model whose HF ids are sentencepiece's BPE's."""
    # Merges: sentencepiece merges the two symbols side by side whose joined text is a normal
    # piece of the highest score, the leftmost of equals. Its symbols are chars and normal
    # pieces: control, unknown and byte pieces are no symbol text, so they are no merge's
    # part or result. Each split of a normal piece into two symbols is a merge, ranked by the
    # piece's score (the order of transformers' `SentencePieceExtractor`).
    symbols = {text for text, _, k in m.pieces if k == NORMAL}
    ranked: list[tuple[float, int, int, int, str, str]] = []
    for i, (text, score, kind) in enumerate(m.pieces):
        if kind != NORMAL:
            continue
        for cut in range(1, len(text)):
            left, right = text[:cut], text[cut:]
            if left in symbols and right in symbols:
                ranked.append((-score, i, vocab[left], vocab[right], left, right))
    ranked.sort()
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": unk,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": True,
        "byte_fallback": m.byte_fallback,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": [[left, right] for *_, left, right in ranked],
    }


def _unigram(m: ModelFile) -> dict[str, Any]:
    """The Unigram model whose ids are sentencepiece's Unigram's: HF's layout (transformers'
    converters write it so), and ferrotok's own key for sentencepiece's arithmetic, which names
    the pieces its trie leaves out (control, unknown and byte pieces: no text matches them)."""
    return {
        "type": "Unigram",
        "unk_id": next(i for i, (_, _, k) in enumerate(m.pieces) if k == UNKNOWN),
        "vocab": [[text, score] for text, score, _ in m.pieces],
        "byte_fallback": m.byte_fallback,
        "ferrotok_sentencepiece": {
            "reserved": [i for i, (_, _, k) in enumerate(m.pieces) if k != NORMAL]
        },
    }


def _bos_template(m: ModelFile) -> dict[str, Any] | None:
    """`<s>` in front of each sequence, as HF's Llama files put it (None without a BOS)."""
    if not 0 <= m.bos_id < len(m.pieces) or m.pieces[m.bos_id][2] != CONTROL:
        return None
    return template([(m.bos_id, m.pieces[m.bos_id][0])], [])


def model_path(path: str | os.PathLike[str]) -> Path:
    """`path` itself, or the `tokenizer.model` in it if it is a directory."""
    return file_or_inner(path, "tokenizer.model", "SentencePiece model")


def is_model_name(path: str) -> bool:
    """Whether `path` is named as SentencePiece models are (`x.model`, Mistral's
    `tokenizer.model.v3`)."""
    return re.search(r"\.model(\.v\w+)?$", os.path.basename(path)) is not None


# What sentencepiece's decoding drops in front, which the tokenizer.json's `Strip` does not
# say exactly (`Encoding._sp_leading_spaces` applies it): (`remove_extra_whitespaces`, the id
# of the piece `▁` or None, the unknown piece's id, the byte pieces' ids), or None where it
# drops nothing (no dummy prefix and extra whitespace kept).
Front = tuple[bool, "int | None", int, frozenset[int]]


def front(m: ModelFile) -> Front | None:
    """`m`'s `Front`."""
    if not m.add_dummy_prefix and not m.remove_extra_whitespaces:
        return None
    meta = next((i for i, (t, _, k) in enumerate(m.pieces) if t == META and k == NORMAL), None)
    unk = next(i for i, (_, _, k) in enumerate(m.pieces) if k == UNKNOWN)
    byte_ids = frozenset(i for i, (_, _, k) in enumerate(m.pieces) if k == BYTE)
    return m.remove_extra_whitespaces, meta, unk, byte_ids


def read_model(path: str | os.PathLike[str]) -> tuple[str, str, Front | None]:
    """The `tokenizer.json` text for the `.model` file at `path`, the encoding's name (the
    file's name up to `.model`, or its directory's for `tokenizer.model`) and its `Front`."""
    p = model_path(path)
    m = ModelFile(p.read_bytes())
    config = tokenizer_json(m)
    name = p.name.split(".model")[0]
    if name == "tokenizer":
        name = p.absolute().parent.name or name
    return json.dumps(config, ensure_ascii=False), name, front(m)
