"""ferrotok.data: packing with a separator, padding with attention masks, DataLoader batches."""

from __future__ import annotations

import pytest
from ferrotok.data import IGNORE_INDEX, PackedDataset, PaddedDataset, document_causal_mask

DOCS = [[11, 12, 13], [21, 22], [31, 32, 33, 34, 35], [41]]
SEP = 0


def stream_of(docs, sep=SEP):
    out = []
    for d in docs:
        out += d + ([sep] if sep is not None else [])
    return out


@pytest.mark.parametrize("seq_len", [1, 3, 4, 7, 15])
def test_packing_targets_every_stream_token_once(seq_len):
    ds = PackedDataset(DOCS, seq_len, separator=SEP, drop_last=False, as_tensors=False)
    stream = stream_of(DOCS)
    assert ds.num_tokens == len(stream) == 15 and ds.num_documents == 4
    inputs, labels = [], []
    for i in range(len(ds)):
        item = ds[i]
        assert all(len(v) == seq_len for v in item.values())
        real = sum(item["attention_mask"])
        inputs += item["input_ids"][:real]
        labels += item["labels"][:real]
        assert item["labels"][real:] == [IGNORE_INDEX] * (seq_len - real)
        # labels are the inputs shifted by one
        assert item["labels"][: real - 1] == item["input_ids"][1:real]
    assert inputs == stream[:-1] and labels == stream[1:]


def test_packing_drop_last_and_separator():
    ds = PackedDataset(DOCS, 4, separator=SEP, as_tensors=False)
    assert len(ds) == (15 - 1) // 4 == 3
    assert ds[0] == {"input_ids": [11, 12, 13, 0], "labels": [12, 13, 0, 21]}
    assert ds[-1] == ds[2] and ds[2]["input_ids"] == [32, 33, 34, 35]
    with pytest.raises(IndexError, match="out of range for 3 sequences"):
        ds[3]
    no_sep = PackedDataset(DOCS, 4, as_tensors=False)
    assert no_sep.stream.tolist() == [11, 12, 13, 21, 22, 31, 32, 33, 34, 35, 41]
    assert len(PackedDataset([[1]], 4, as_tensors=False)) == 0


def test_packing_positions_and_document_ids():
    ds = PackedDataset(DOCS, 5, separator=SEP, document_ids=True, as_tensors=False)
    stream = stream_of(DOCS)
    all_pos, all_doc = [], []
    for i in range(len(ds)):
        all_pos += ds[i]["position_ids"]
        doc_ids = ds[i]["document_ids"]
        assert doc_ids[0] == 0 and doc_ids == sorted(doc_ids)
        all_doc.append(doc_ids)
    want_pos = []
    p = 0
    for tok in stream[: len(all_pos)]:
        want_pos.append(p)
        p = 0 if tok == SEP else p + 1
    assert all_pos == want_pos
    assert all_doc[0] == [0, 0, 0, 0, 1]  # 11 12 13 <sep> | 21
    with pytest.raises(ValueError, match="needs a separator"):
        PackedDataset(DOCS, 4, document_ids=True)


def test_padding_truncate_and_split():
    ds = PaddedDataset(DOCS, 4, pad_id=99, separator=SEP, as_tensors=False)
    assert len(ds) == 4
    assert ds[0] == {  # [11, 12, 13, sep]: three predictions
        "input_ids": [11, 12, 13, 99],
        "labels": [12, 13, SEP, IGNORE_INDEX],
        "attention_mask": [1, 1, 1, 0],
    }
    item = ds[1]  # [21, 22, sep]: two predictions
    assert item["input_ids"] == [21, 22, 99, 99]
    assert item["labels"] == [22, SEP, IGNORE_INDEX, IGNORE_INDEX]
    assert item["attention_mask"] == [1, 1, 0, 0]
    assert ds[2]["input_ids"] == [31, 32, 33, 34] and ds[2]["labels"] == [32, 33, 34, 35]

    split = PaddedDataset(DOCS, 4, pad_id=99, separator=SEP, overflow="split", as_tensors=False)
    long = [split[i] for i in range(len(split)) if split[i]["input_ids"][0] in (31, 35)]
    assert [x["input_ids"] for x in long] == [[31, 32, 33, 34], [35, 99, 99, 99]]
    assert long[1]["labels"] == [SEP, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]

    skipped = PaddedDataset([[5], [], [6, 7]], 4, as_tensors=False)
    assert len(skipped) == 1 and skipped.num_skipped == 2 and skipped.num_documents == 3


def test_bad_input_says_what_was_expected():
    with pytest.raises(ValueError, match="seq_len must be a positive int"):
        PackedDataset(DOCS, 0)
    with pytest.raises(ValueError, match="document 1 contains a negative token id"):
        PackedDataset([[1], [2, -3]], 4)
    with pytest.raises(TypeError, match="document 0 must be a sequence of int token ids"):
        PaddedDataset([["a", "b"]], 4)
    # Bytes are not ids (an `array("q", b)` reads them as raw 8-byte ints).
    for doc in (b"hello wo", bytearray(b"hello wo"), memoryview(b"hello wo"), "hello"):
        for dataset in (PackedDataset, PaddedDataset):
            with pytest.raises(TypeError, match=f"got {type(doc).__name__}"):
                dataset([doc], 4)
    with pytest.raises(ValueError, match="overflow must be"):
        PaddedDataset(DOCS, 4, overflow="wrap")
    with pytest.raises(ValueError, match="separator must be a non-negative int"):
        PackedDataset(DOCS, 4, separator=-1)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        PackedDataset(DOCS, 2, as_tensors=False)[1.0]  # type: ignore[index]
    with pytest.raises(TypeError, match="document_ids must be a torch tensor, got list"):
        document_causal_mask([[0, 0, 1]])


def test_tensors_and_dataloader_batches():
    import torch
    from ferrotok.data import document_causal_mask

    ds = PackedDataset(DOCS * 10, 8, separator=SEP, document_ids=True)
    item = ds[0]
    assert item["input_ids"].dtype == torch.long and item["input_ids"].shape == (8,)
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=4)))
    assert set(batch) == {"input_ids", "labels", "position_ids", "document_ids"}
    assert all(v.shape == (4, 8) for v in batch.values())
    mask = document_causal_mask(batch["document_ids"])
    assert mask.shape == (4, 8, 8) and mask.dtype == torch.bool
    assert not mask[0, 4, 3]  # the second document's first token does not see the first
    assert mask[0, 3, 0] and not mask[0, 0, 1]

    padded = PaddedDataset(DOCS, 6, pad_id=0, separator=SEP)
    batch = next(iter(torch.utils.data.DataLoader(padded, batch_size=4)))
    assert batch["attention_mask"].tolist()[3] == [1, 0, 0, 0, 0, 0]


def test_numpy_documents_are_accepted():
    import numpy as np  # a test dependency; Encoding.encode_to_numpy returns such arrays

    docs = [np.array([1, 2, 3], dtype=np.uint32), np.array([4, 5], dtype=np.int64)]
    ds = PackedDataset(docs, 2, separator=0, as_tensors=False)
    assert ds.stream.tolist() == [1, 2, 3, 0, 4, 5, 0]
