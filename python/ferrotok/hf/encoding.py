"""`ferrotok.hf.Encoding`: the result of `ferrotok.hf.Tokenizer.encode`, as `tokenizers.Encoding`.

Invariant: every list has one entry per token (`ids`, `type_ids`, `tokens`, `word_ids`,
`offsets`, `special_tokens_mask`, `attention_mask`), and the operations HuggingFace applies
after the model (truncation with overflow and stride, merging the pieces of a template,
padding) transform them exactly as `tokenizers` 0.23's `Encoding` does, quirks included
(truncation forgets the sequence ranges; an overflowing piece keeps the type ids it had).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

Offsets = tuple[int, int]


def unsigned(value: Any, bits: int = 64) -> int:
    """`value` as HF's bindings read an unsigned int of `bits` bits (PyO3's conversion): an
    int or anything with `__index__` (a float or str is a TypeError), in range (else an
    OverflowError, never a value wrapped or clamped)."""
    i = operator.index(value)
    if i < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if i >> bits:
        raise OverflowError("int too big to convert")
    return i


class Encoding:
    """One encoded input: ids and their alignment to the text (`tokenizers.Encoding`'s face)."""

    __slots__ = (
        "ids",
        "type_ids",
        "tokens",
        "word_ids",
        "offsets",
        "special_tokens_mask",
        "attention_mask",
        "overflowing",
        "_ranges",
    )

    def __init__(
        self,
        ids: list[int],
        type_ids: list[int],
        tokens: list[str],
        word_ids: list[int | None],
        offsets: list[Offsets],
        special_tokens_mask: list[int],
        attention_mask: list[int],
        overflowing: list[Encoding] | None = None,
        ranges: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        self.ids = ids
        self.type_ids = type_ids
        self.tokens = tokens
        self.word_ids = word_ids
        self.offsets = offsets
        self.special_tokens_mask = special_tokens_mask
        self.attention_mask = attention_mask
        self.overflowing: list[Encoding] = overflowing if overflowing is not None else []
        self._ranges: dict[int, tuple[int, int]] = ranges if ranges is not None else {}

    @classmethod
    def from_model(
        cls,
        ids: list[int],
        tokens: list[str],
        offsets: list[Offsets],
        word_ids: list[int | None],
        type_id: int = 0,
    ) -> Encoding:
        n = len(ids)
        return cls(ids, [type_id] * n, tokens, word_ids, offsets, [0] * n, [1] * n)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return (
            f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
            "attention_mask, special_tokens_mask, overflowing])"
        )

    @property
    def words(self) -> list[int | None]:
        """The word index of each token (`word_ids`; `tokenizers`' older name)."""
        return self.word_ids

    @property
    def n_sequences(self) -> int:
        return len(self._ranges) or 1

    @property
    def sequence_ids(self) -> list[int | None]:
        out: list[int | None] = [None] * len(self.ids)
        for seq in range(self.n_sequences):
            start, end = self._range(seq)
            out[start:end] = [seq] * (end - start)
        return out

    def _range(self, seq: int) -> tuple[int, int]:
        return self._ranges.get(unsigned(seq), (0, len(self.ids)))

    def copy(self) -> Encoding:
        return Encoding(
            list(self.ids),
            list(self.type_ids),
            list(self.tokens),
            list(self.word_ids),
            list(self.offsets),
            list(self.special_tokens_mask),
            list(self.attention_mask),
            [o.copy() for o in self.overflowing],
            dict(self._ranges),
        )

    def set_sequence_id(self, sequence_id: int) -> None:
        self._ranges[sequence_id] = (0, len(self.ids))

    # ---- alignment queries (as tokenizers.Encoding) ----

    def token_to_sequence(self, token_index: int) -> int | None:
        token_index = unsigned(token_index)
        if token_index > len(self.ids):
            return None
        if not self._ranges:
            return 0
        for seq, (start, end) in self._ranges.items():
            if start <= token_index < end:
                return seq
        return None

    def token_to_chars(self, token_index: int) -> Offsets | None:
        token_index = unsigned(token_index)
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.ids):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index: int) -> int | None:
        token_index = unsigned(token_index)
        if self.token_to_sequence(token_index) is None or not 0 <= token_index < len(self.ids):
            return None
        return self.word_ids[token_index]

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        char_pos = unsigned(char_pos)
        start, end = self._range(sequence_index)
        for i in range(start, min(end, len(self.offsets))):
            a, b = self.offsets[i]
            if a <= char_pos < b:
                return i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
        char_pos = unsigned(char_pos)
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> Offsets | None:
        word_index = unsigned(word_index, 32)
        start, end = self._range(sequence_index)
        first = last = None
        for i in range(start, min(end, len(self.word_ids))):
            w = self.word_ids[i]
            # HF stops at the first token of a later word (None sorts first).
            if w is not None and w > word_index:
                break
            if w == word_index:
                if first is None:
                    first = i
                last = i + 1
        if first is None or last is None:
            return None
        return (first, last)

    def word_to_chars(self, word_index: int, sequence_index: int = 0) -> Offsets | None:
        word_index = unsigned(word_index, 32)
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None or span[1] == 0:
            return None
        return (self.offsets[span[0]][0], self.offsets[span[1] - 1][1])

    # ---- the operations HF applies after the model ----

    def _slice(self, start: int, stop: int) -> Encoding:
        return Encoding(
            self.ids[start:stop],
            self.type_ids[start:stop],
            self.tokens[start:stop],
            self.word_ids[start:stop],
            self.offsets[start:stop],
            self.special_tokens_mask[start:stop],
            self.attention_mask[start:stop],
        )

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Keeps `max_length` tokens; the rest go to `overflowing`, windows overlapping by
        `stride` tokens (tokenizers' `Encoding.truncate`)."""
        max_length, stride = unsigned(max_length), unsigned(stride)
        n = len(self.ids)
        if max_length >= n:
            return
        if max_length == 0:
            whole = self.copy()
            self.__init__([], [], [], [], [], [], [])  # type: ignore[misc]
            self.overflowing.append(whole)
            return
        if stride >= max_length:
            raise ValueError(
                f"`stride` must be strictly less than `max_len={max_length}` (note that `max_len` "
                "may be shorter than the max length of the original model, as it subtracts the "
                "number of special characters"
            )
        self._ranges.clear()
        step = max_length - stride
        parts: list[tuple[int, int]] = []
        if direction == "right":
            for start in range(0, n, step):
                stop = min(start + max_length, n)
                parts.append((start, stop))
                if stop == n:
                    break
        elif direction == "left":
            for last in range(n - 1, -1, -step):
                stop = last + 1
                start = max(stop - max_length, 0)
                if start < stop:
                    parts.append((start, stop))
                    if start == 0:
                        break
        else:
            raise ValueError(f"direction must be 'right' or 'left', got {direction!r}")
        first = self._slice(*parts[0])
        first.overflowing = [self._slice(a, b) for a, b in parts[1:]]
        self._assign(first)

    def _assign(self, other: Encoding) -> None:
        for name in Encoding.__slots__:
            setattr(self, name, getattr(other, name))

    def merge_with(self, pair: Encoding, growing_offsets: bool = False) -> None:
        """Appends `pair` (tokenizers' `Encoding::merge_with`, overflowing combinations too)."""
        overflowings: list[Encoding] = []
        for mine in self.overflowing:
            n = mine.copy()
            n.merge_with(pair.copy(), growing_offsets)
            overflowings.append(n)
            for theirs in pair.overflowing:
                n = mine.copy()
                n.merge_with(theirs.copy(), growing_offsets)
                overflowings.append(n)
        for theirs in pair.overflowing:
            n = self.copy()
            n.merge_with(theirs.copy(), growing_offsets)
            overflowings.append(n)
        length = len(self.ids)
        for seq, (a, b) in pair._ranges.items():
            self._ranges[seq] = (length + a, length + b)
        self.ids = self.ids + pair.ids
        self.type_ids = self.type_ids + pair.type_ids
        self.tokens = self.tokens + pair.tokens
        self.word_ids = self.word_ids + pair.word_ids
        shift = self.offsets[-1][1] if growing_offsets and self.offsets else 0
        if shift:
            self.offsets = self.offsets + [(a + shift, b + shift) for a, b in pair.offsets]
        else:
            self.offsets = self.offsets + pair.offsets
        self.special_tokens_mask = self.special_tokens_mask + pair.special_tokens_mask
        self.attention_mask = self.attention_mask + pair.attention_mask
        self.overflowing = overflowings

    @staticmethod
    def merge(encodings: Iterable[Encoding], growing_offsets: bool = True) -> Encoding:
        """One Encoding of all of `encodings` (`tokenizers.Encoding.merge`, whose default
        also shifts each part's offsets past the last offset before it)."""
        out = Encoding([], [], [], [], [], [], [])
        encodings = list(encodings)
        if growing_offsets or any(e.overflowing for e in encodings):
            for e in encodings:
                out.merge_with(e, growing_offsets)
            return out
        # What `merge_with` gives without overflowing pieces or shifted offsets, each list
        # grown in place: `merge_with` makes each list anew, so the first parts' items were
        # copied once for every part after them.
        for e in encodings:
            length = len(out.ids)
            for seq, (a, b) in e._ranges.items():
                out._ranges[seq] = (length + a, length + b)
            out.ids += e.ids
            out.type_ids += e.type_ids
            out.tokens += e.tokens
            out.word_ids += e.word_ids
            out.offsets += e.offsets
            out.special_tokens_mask += e.special_tokens_mask
            out.attention_mask += e.attention_mask
        return out

    def pad(
        self,
        length: int,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
    ) -> None:
        """Pads to `length` tokens (and the overflowing pieces too), as tokenizers does."""
        length, pad_id = unsigned(length), unsigned(pad_id, 32)
        pad_type_id = unsigned(pad_type_id, 32)
        for o in self.overflowing:
            o.pad(length, direction, pad_id, pad_type_id, pad_token)
        n = length - len(self.ids)
        if n <= 0:
            return
        if direction == "left":
            self.ids = [pad_id] * n + self.ids
            self.type_ids = [pad_type_id] * n + self.type_ids
            self.tokens = [pad_token] * n + self.tokens
            no_words: list[int | None] = [None] * n
            self.word_ids = no_words + self.word_ids
            self.attention_mask = [0] * n + self.attention_mask
            self.special_tokens_mask = [1] * n + self.special_tokens_mask
            self.offsets = [(0, 0)] * n + self.offsets
            self._ranges = {s: (a + n, b + n) for s, (a, b) in self._ranges.items()}
        else:
            self.ids = self.ids + [pad_id] * n
            self.type_ids = self.type_ids + [pad_type_id] * n
            self.tokens = self.tokens + [pad_token] * n
            self.word_ids = self.word_ids + [None] * n
            self.attention_mask = self.attention_mask + [0] * n
            self.special_tokens_mask = self.special_tokens_mask + [1] * n
            self.offsets = self.offsets + [(0, 0)] * n
