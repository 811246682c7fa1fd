"""HuggingFace post-processors (what `add_special_tokens=True` adds), from `tokenizer.json`.

Invariant: `post_process(processor, encoding, pair, add_special_tokens, truncation, padding)`
gives the `Encoding` that `tokenizers` 0.23's `Tokenizer::post_process` gives for the same
model output: truncate (room left for the tokens the template adds), apply the processor
(TemplateProcessing, ByteLevel offset trimming, RobertaProcessing, BertProcessing, Sequence
of these; none), then pad. A processor type not listed here is refused by `build` with an
error naming it.
"""

from __future__ import annotations

from typing import Any

from .._core import trim_byte_level_offsets
from .encoding import Encoding

# Rust's `char::is_whitespace` (the White_Space property), which the added tokens' lstrip/rstrip
# use (ByteLevel's offset trimming applies the same property in the core).
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class Processor:
    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def single_ids(self) -> tuple[list[int], list[int]]:
        """The ids put before and after a single sequence (tiktoken's face's template)."""
        return [], []

    def process_encodings(self, encodings: list[Encoding], add_special: bool) -> list[Encoding]:
        raise NotImplementedError

    def process(self, encoding: Encoding, pair: Encoding | None, add_special: bool) -> Encoding:
        encodings = [encoding] if pair is None else [encoding, pair]
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            for o in e.overflowing:
                o.set_sequence_id(i)
            e.type_ids = [i] * len(e.ids)
        out = self.process_encodings(encodings, add_special)
        if len(out) == 1:
            # Merged into an empty Encoding, one Encoding comes out a copy of itself; this
            # one is the call's own (`post_process` is handed new Encodings, and every
            # processor returns them or new ones), so it is the result as it is.
            return out[0]
        return Encoding.merge(out, False)


def _trim_offsets(encoding: Encoding, add_prefix_space: bool) -> None:
    """ByteLevel's `process_offsets`: offsets lose the token's leading and trailing spaces
    (the rule is the core's, `pipeline/byte_level.rs`)."""
    trim_byte_level_offsets(encoding.tokens, encoding.offsets, add_prefix_space)


class ByteLevel(Processor):
    def __init__(self, config: dict[str, Any]) -> None:
        self.trim_offsets = bool(config.get("trim_offsets", True))
        self.add_prefix_space = bool(config.get("add_prefix_space", True))

    def process_encodings(self, encodings: list[Encoding], add_special: bool) -> list[Encoding]:
        if self.trim_offsets:
            for e in encodings:
                _trim_offsets(e, self.add_prefix_space)
                for o in e.overflowing:
                    _trim_offsets(o, self.add_prefix_space)
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        return encodings


class _SpecialPiece:
    __slots__ = ("ids", "tokens", "type_id")

    def __init__(self, ids: list[int], tokens: list[str], type_id: int) -> None:
        self.ids = ids
        self.tokens = tokens
        self.type_id = type_id


class Template(Processor):
    def __init__(self, config: dict[str, Any]) -> None:
        specials = {
            name: (list(spec["ids"]), list(spec["tokens"]))
            for name, spec in (config.get("special_tokens") or {}).items()
        }
        self.single = self._pieces(config["single"], specials)
        self.pair = self._pieces(config["pair"], specials)
        # The sequences a template places more than once (each place gets a copy).
        self.single_repeats = self._repeats(self.single)
        self.pair_repeats = self._repeats(self.pair)

    @staticmethod
    def _repeats(template: list[tuple[int, int] | _SpecialPiece]) -> set[int]:
        seqs = [p[0] for p in template if isinstance(p, tuple)]
        return {i for i in seqs if seqs.count(i) > 1}

    @staticmethod
    def _pieces(
        template: list[dict[str, Any]], specials: dict[str, tuple[list[int], list[str]]]
    ) -> list[tuple[int, int] | _SpecialPiece]:
        out: list[tuple[int, int] | _SpecialPiece] = []
        for piece in template:
            if "Sequence" in piece:
                seq = piece["Sequence"]
                out.append((0 if seq["id"] == "A" else 1, int(seq["type_id"])))
            elif "SpecialToken" in piece:
                sp = piece["SpecialToken"]
                if sp["id"] not in specials:
                    raise ValueError(
                        f"TemplateProcessing: special token {sp['id']!r} missing from its "
                        "special_tokens"
                    )
                ids, tokens = specials[sp["id"]]
                out.append(_SpecialPiece(ids, tokens, int(sp["type_id"])))
            else:
                raise ValueError(f"TemplateProcessing: unknown template piece {piece!r}")
        return out

    def added_tokens(self, is_pair: bool) -> int:
        template = self.pair if is_pair else self.single
        return sum(len(p.ids) for p in template if isinstance(p, _SpecialPiece))

    def single_ids(self) -> tuple[list[int], list[int]]:
        before: list[int] = []
        after: list[int] = []
        side = before
        for piece in self.single:
            if isinstance(piece, _SpecialPiece):
                side.extend(piece.ids)
            else:
                side = after  # the special tokens after the (first) sequence
        return before, after

    def process_encodings(self, encodings: list[Encoding], add_special: bool) -> list[Encoding]:
        template, repeats = (
            (self.pair, self.pair_repeats)
            if len(encodings) == 2
            else (self.single, self.single_repeats)
        )
        out: list[Encoding] = []
        for piece in template:
            if isinstance(piece, _SpecialPiece):
                if add_special:
                    n = len(piece.ids)
                    out.append(
                        Encoding(
                            list(piece.ids),
                            [piece.type_id] * n,
                            list(piece.tokens),
                            [None] * n,
                            [(0, 0)] * n,
                            [1] * n,
                            [1] * n,
                        )
                    )
            else:
                index, type_id = piece
                if index >= len(encodings):
                    raise ValueError("TemplateProcessing: the template names a sequence not given")
                e = encodings[index]
                e.type_ids = [type_id] * len(e.ids)
                e.set_sequence_id(index)
                # The call's own Encoding (see `Processor.process`), copied where the
                # template places it again: each place has its own type ids.
                out.append(e.copy() if index in repeats else e)
        return out


class _Wrapping(Processor):
    """RobertaProcessing and BertProcessing: [cls] A [sep] ([sep] B [sep] for Roberta,
    B [sep] for Bert)."""

    roberta = True

    def __init__(self, config: dict[str, Any]) -> None:
        sep, cls = _token_pair(config.get("sep")), _token_pair(config.get("cls"))
        if sep is None or cls is None:
            raise ValueError(
                f"post-processor {config.get('type')!r}: `sep` and `cls` must each be a "
                "[token, id] pair (HF does not load it either)"
            )
        self.sep, self.cls = sep, cls
        # Roberta's flags are both present (`build` chose it for that); Bert has none.
        self.trim_offsets = config.get("trim_offsets") is True and self.roberta
        self.add_prefix_space = config.get("add_prefix_space") is True

    def added_tokens(self, is_pair: bool) -> int:
        if self.roberta:
            return 4 if is_pair else 2
        return 3 if is_pair else 2

    def single_ids(self) -> tuple[list[int], list[int]]:
        return [self.cls[1]], [self.sep[1]]

    def _wrap(self, e: Encoding, first: bool, seq: int) -> Encoding:
        head = self.cls if first else self.sep
        if not first and not self.roberta:
            ids = e.ids + [self.sep[1]]
            tokens = e.tokens + [self.sep[0]]
            words = e.word_ids + [None]
            offsets = e.offsets + [(0, 0)]
            mask = [0] * len(e.ids) + [1]
            type_ids = [1] * len(ids)
            start, end = 0, len(ids) - 1
        else:
            ids = [head[1]] + e.ids + [self.sep[1]]
            tokens = [head[0]] + e.tokens + [self.sep[0]]
            words = [None] + e.word_ids + [None]
            offsets = [(0, 0)] + e.offsets + [(0, 0)]
            mask = [1] + [0] * len(e.ids) + [1]
            type_ids = [0 if (self.roberta or first) else 1] * len(ids)
            start, end = 1, len(ids) - 1
        return Encoding(
            ids, type_ids, tokens, words, offsets, mask, [1] * len(ids), [], {seq: (start, end)}
        )

    def process_encodings(self, encodings: list[Encoding], add_special: bool) -> list[Encoding]:
        if self.trim_offsets:
            for e in encodings:
                _trim_offsets(e, self.add_prefix_space)
                for o in e.overflowing:
                    _trim_offsets(o, self.add_prefix_space)
        if self.roberta:
            for e in encodings:
                e.type_ids = [0] * len(e.ids)
        if not add_special:
            return encodings
        out = []
        for i, e in enumerate(encodings):
            wrapped = self._wrap(e, i == 0, i)
            wrapped.overflowing = [self._wrap(o, i == 0, i) for o in e.overflowing]
            out.append(wrapped)
        return out


class Roberta(_Wrapping):
    roberta = True


class Bert(_Wrapping):
    roberta = False


class SequenceProcessor(Processor):
    def __init__(self, processors: list[Processor]) -> None:
        self.processors = processors

    def added_tokens(self, is_pair: bool) -> int:
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def single_ids(self) -> tuple[list[int], list[int]]:
        # Each step wraps what the steps before it made.
        before: list[int] = []
        after: list[int] = []
        for p in self.processors:
            b, a = p.single_ids()
            before, after = b + before, after + a
        return before, after

    def process_encodings(self, encodings: list[Encoding], add_special: bool) -> list[Encoding]:
        for p in self.processors:
            encodings = p.process_encodings(encodings, add_special)
        return encodings


def build(config: dict[str, Any] | None) -> Processor | None:
    """The processor a `tokenizer.json`'s `post_processor` describes (None for none)."""
    if config is None:
        return None
    if not isinstance(config, dict):
        raise ValueError(f"a post-processor must be an object, not {type(config).__name__}")
    kind = kind_of(config)
    try:
        if kind == "ByteLevel":
            return ByteLevel(config)
        if kind == "TemplateProcessing":
            return Template(config)
        if kind == "RobertaProcessing":
            return Roberta(config)
        if kind == "BertProcessing":
            return Bert(config)
    except (KeyError, TypeError, IndexError) as e:
        raise ValueError(f"post-processor {kind!r} is malformed ({type(e).__name__}: {e})") from e
    if kind == "Sequence":
        steps = config.get("processors")
        if not isinstance(steps, list):
            raise ValueError("post-processor 'Sequence' has no `processors` list")
        return SequenceProcessor([_must(build(p)) for p in steps])
    raise ValueError(
        f"unsupported post-processor {kind!r} (ferrotok.hf supports ByteLevel, "
        "TemplateProcessing, RobertaProcessing, BertProcessing and Sequence)"
    )


def kind_of(config: dict[str, Any]) -> Any:
    """The post-processor HF makes of `config`: its `type`, but where it has `sep` and `cls`
    Bert's, or Roberta's if both bool flags are there too.

    HF reads a post-processor as the first of Roberta, Bert, ByteLevel, Template and Sequence
    whose fields it has, whatever its `type` says (serde's untagged enum does not check the
    tag): a RobertaProcessing without `trim_offsets` is a BertProcessing to it, a
    BertProcessing with both flags a RobertaProcessing."""
    if _token_pair(config.get("sep")) is not None and _token_pair(config.get("cls")) is not None:
        flags = (config.get("trim_offsets"), config.get("add_prefix_space"))
        bools = all(isinstance(f, bool) for f in flags)
        return "RobertaProcessing" if bools else "BertProcessing"
    return config.get("type")


def _token_pair(v: Any) -> tuple[str, int] | None:
    """A `[token, id]` pair as HF reads `sep` and `cls` (a string and a u32), else None."""
    if not isinstance(v, list) or len(v) != 2:
        return None
    token, i = v
    if not isinstance(token, str) or not isinstance(i, int) or isinstance(i, bool):
        return None
    return (token, i) if 0 <= i < 2**32 else None


def _must(p: Processor | None) -> Processor:
    if p is None:
        raise ValueError("a post-processor Sequence holds a null processor")
    return p


def default_process(encoding: Encoding, pair: Encoding | None) -> Encoding:
    """What HF does with no post-processor: a pair is concatenated, type ids untouched."""
    if pair is None:
        return encoding
    out = Encoding([], [], [], [], [], [], [])
    for i, e in enumerate((encoding, pair)):
        e.set_sequence_id(i)
        out.merge_with(e, False)
    return out


def truncate_pair(encoding: Encoding, pair: Encoding | None, params: dict[str, Any]) -> None:
    """tokenizers' `truncate_encodings`, in place."""
    max_length = int(params["max_length"])
    stride = int(params.get("stride", 0))
    direction = str(params.get("direction", "right"))
    strategy = str(params.get("strategy", "longest_first"))
    if max_length == 0:
        encoding.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return
    total = len(encoding.ids) + (len(pair.ids) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    if strategy == "longest_first":
        if pair is None:
            encoding.truncate(total - to_remove, stride, direction)
            return
        n1, n2 = len(encoding.ids), len(pair.ids)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        encoding.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
        return
    if strategy in ("only_first", "only_second"):
        if strategy == "only_first":
            target = encoding
        elif pair is not None:
            target = pair
        else:
            raise ValueError("Truncation error: Second sequence not provided")
        if len(target.ids) > to_remove:
            target.truncate(len(target.ids) - to_remove, stride, direction)
            return
        raise ValueError(
            "Truncation error: Sequence to truncate too short to respect the provided max_length"
        )
    raise ValueError(f"unknown truncation strategy {strategy!r}")


def pad_batch(encodings: list[Encoding], params: dict[str, Any]) -> None:
    """tokenizers' `pad_encodings`: to `length`, or to the longest of the batch."""
    if not encodings:
        return
    length = params.get("length")
    target = int(length) if length is not None else max(len(e.ids) for e in encodings)
    multiple = params.get("pad_to_multiple_of")
    if multiple and target % multiple:
        target += multiple - target % multiple
    for e in encodings:
        e.pad(
            target,
            str(params.get("direction", "right")),
            int(params.get("pad_id", 0)),
            int(params.get("pad_type_id", 0)),
            str(params.get("pad_token", "[PAD]")),
        )


def post_process(
    processor: Processor | None,
    encoding: Encoding,
    pair: Encoding | None,
    add_special: bool,
    truncation: dict[str, Any] | None,
    padding: dict[str, Any] | None,
) -> Encoding:
    if truncation is not None:
        added = processor.added_tokens(pair is not None) if processor is not None else 0
        if add_special and added > 0:
            params = dict(truncation)
            # usize arithmetic in tokenizers (release build): a template longer than
            # max_length wraps around to "no limit".
            params["max_length"] = (int(truncation["max_length"]) - added) % (1 << 64)
            truncate_pair(encoding, pair, params)
        else:
            truncate_pair(encoding, pair, truncation)
    if processor is not None:
        final = processor.process(encoding, pair, add_special)
    else:
        final = default_process(encoding, pair)
    if padding is not None:
        pad_batch([final], padding)
    return final
