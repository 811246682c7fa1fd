//! The encoding class: `CoreBPE`, tiktoken's compiled encoder, over the core's
//! [`Encoder`]. Its methods convert arguments, run the core with the GIL released and
//! convert the results; batches go through `batches.rs`.

use super::batches::{
    batch, decode_list_shared, encode_lists, encode_objects, threads_for, SignalPoll,
};
use super::data::{FlatArrays, Layout};
use super::errors::{detached, detached_polled, panic_error};
use super::hf_face;
use super::id_arrays::numpy_api;
use super::ids::{id_lists, ids_read_directly, packed_ids};
use super::ints;
use crate::encode::encoder::{Allowed, Encoder};
use crate::error::Error;
use crate::pipeline::{Detail, Pipeline};
use crate::runtime::batch::{
    batch_map, shared_decode, threads_for_ids, DECODE_PIECE, DECODE_SHARED_MIN,
};
use crate::runtime::pool::cores;
use crate::vocab::Rank;
use numpy::PyArray1;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Runs `f` with the GIL released on `data` as text, with every special token allowed or
/// none: the parts of a file that the command line hands over as bytes, never decoded by
/// Python. Bytes that are not UTF-8 raise the `UnicodeDecodeError` Python's decoder gives
/// (the same position: the start of the first bad sequence); with none allowed, text that
/// holds a special token's text raises `ValueError`, as `Encoding.encode` does by default.
fn on_utf8<T: Send>(
    py: Python<'_>,
    enc: &Encoder,
    data: &[u8],
    allow_special: bool,
    f: impl FnOnce(&str, Allowed<'_>) -> Result<T, Error> + Send,
) -> PyResult<T> {
    enum Stop {
        NotUtf8(std::str::Utf8Error),
        Special,
    }
    let done = detached_polled(py, || {
        let text = match std::str::from_utf8(data) {
            Ok(text) => text,
            Err(e) => return Ok(Err(Stop::NotUtf8(e))),
        };
        if allow_special {
            f(text, Allowed::All).map(Ok)
        } else if enc.holds_special_text(text) {
            Ok(Err(Stop::Special))
        } else {
            f(text, Allowed::None).map(Ok)
        }
    })?;
    done.map_err(|stop| match stop {
        Stop::NotUtf8(e) => pyo3::exceptions::PyUnicodeDecodeError::new_err_from_utf8(py, data, e),
        Stop::Special => PyValueError::new_err("the text holds a special token"),
    })
}

/// `parts` joined into one `bytes`.
fn joined_bytes<'py>(py: Python<'py>, parts: &[Vec<u8>]) -> PyResult<Bound<'py, PyBytes>> {
    let len = parts.iter().map(Vec::len).sum();
    PyBytes::new_with(py, len, |out| {
        let mut at = 0;
        for part in parts {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Ok(())
    })
}

/// A pipeline's table of ids its decoder reads otherwise at one end, for Python: (id, the
/// bytes there, the length of its bytes elsewhere).
fn decode_table<'py>(
    py: Python<'py>,
    table: &[(u32, Vec<u8>, usize)],
) -> Vec<(u32, Bound<'py, PyBytes>, usize)> {
    table
        .iter()
        .map(|(id, bytes, own)| (*id, PyBytes::new(py, bytes), *own))
        .collect()
}

/// Appends the bytes of `ids` to `out`, catching a panic as [`detached`] does, with the GIL
/// held.
fn decode_holding_gil(enc: &Encoder, ids: &[Rank], out: &mut Vec<u8>) -> PyResult<()> {
    catch_unwind(AssertUnwindSafe(|| enc.decode_into(ids, out)))
        .map_err(panic_error)?
        .map_err(PyErr::from)
}

/// Per-thread buffers for `decode_bytes`, reused so that a large decode does not pay for
/// fresh pages each time (dropped when they grow past [`SCRATCH_KEEP`]).
struct DecodeScratch {
    ids: Vec<Rank>,
    bytes: Vec<u8>,
}

const SCRATCH_KEEP: usize = 16 << 20;

thread_local! {
    static DECODE_SCRATCH: std::cell::RefCell<DecodeScratch> = const {
        std::cell::RefCell::new(DecodeScratch { ids: Vec::new(), bytes: Vec::new() })
    };
}

/// `(ids, offsets)` of a flat batch.
type FlatBatch<'py> = (Bound<'py, PyArray1<Rank>>, Bound<'py, PyArray1<i64>>);

/// The compiled encoder behind `ferrotok.Encoding` (tiktoken's `CoreBPE`).
#[pyclass(frozen, module = "ferrotok._core", name = "CoreBPE")]
pub struct PyCoreBPE {
    inner: Arc<Encoder>,
}

impl PyCoreBPE {
    fn wrap(inner: Encoder) -> Self {
        PyCoreBPE {
            inner: Arc::new(inner),
        }
    }
}

enum AllowedSet {
    None,
    All,
    Mask(Vec<bool>),
}

impl AllowedSet {
    fn as_allowed(&self) -> Allowed<'_> {
        match self {
            AllowedSet::None => Allowed::None,
            AllowedSet::All => Allowed::All,
            AllowedSet::Mask(m) => Allowed::Some(m),
        }
    }
}

impl PyCoreBPE {
    /// The special tokens an encode call allows, as Python passes them: the word `"all"`
    /// (every special token, without sending the set over: o200k_harmony has 1,088 of them,
    /// and turning that set into Rust strings each call took ~300 us) or a set of token
    /// texts. The word is checked for first, as a type check: a failed set extraction makes
    /// a Python error, which cost more than the rest of a short encode.
    fn allowed(&self, allowed_special: &Bound<'_, PyAny>) -> PyResult<AllowedSet> {
        if let Ok(word) = allowed_special.cast::<pyo3::types::PyString>() {
            return match word.to_str()? {
                "all" => Ok(AllowedSet::All),
                w => Err(PyValueError::new_err(format!(
                    "allowed_special must be 'all' or a set of special tokens, not {w:?}"
                ))),
            };
        }
        let allowed_special: HashSet<String> = allowed_special.extract()?;
        if allowed_special.is_empty() {
            return Ok(AllowedSet::None);
        }
        let mask = self
            .inner
            .allowed_mask(allowed_special.iter().map(String::as_str));
        Ok(if mask.iter().all(|&b| b) {
            AllowedSet::All
        } else if mask.iter().all(|&b| !b) {
            AllowedSet::None
        } else {
            AllowedSet::Mask(mask)
        })
    }

    /// The `tokenizer.json` pipeline of a `from_hf` encoding.
    fn pipeline(&self) -> Result<&Pipeline, Error> {
        self.inner
            .hf
            .as_deref()
            .ok_or_else(|| Error::Input("not a HuggingFace tokenizer.json encoding".into()))
    }
}

/// A text's `(id, start, end, word)` entries (`Pipeline::encode_detail`) as the HF face's
/// three lists: ids, `(start, end)` char offsets, word ids.
#[allow(clippy::type_complexity)]
fn split_detail(detail: &[Detail]) -> (Vec<Rank>, Vec<(usize, usize)>, Vec<Rank>) {
    (
        detail.iter().map(|d| d.0).collect(),
        detail.iter().map(|d| (d.1, d.2)).collect(),
        detail.iter().map(|d| d.3).collect(),
    )
}

/// The HF face's lists of a text's `detail`: ids, tokens (`token_texts[id]`), char offsets
/// and word ids.
fn face_lists<'py>(
    py: Python<'py>,
    token_texts: &Bound<'py, PyList>,
    detail: &[Detail],
) -> PyResult<[Bound<'py, PyList>; 4]> {
    let (ids, offsets, words) = split_detail(detail);
    Ok([
        ints::id_list(py, &ids)?,
        hf_face::items_at(token_texts, &ids)?,
        ints::offset_list(py, &offsets)?,
        ints::id_list(py, &words)?,
    ])
}

#[pymethods]
impl PyCoreBPE {
    #[new]
    fn new(
        py: Python<'_>,
        mergeable_ranks: FxHashMap<Vec<u8>, Rank>,
        special_tokens: Vec<(String, Rank)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let pattern = pattern.to_owned();
        let inner = detached(py, move || {
            Encoder::new(mergeable_ranks, special_tokens, &pattern)
        })?;
        Ok(PyCoreBPE::wrap(inner))
    }

    /// Builds the encoder straight from a `.tiktoken` file's bytes: no Python dict of ranks.
    #[staticmethod]
    fn from_tiktoken(
        py: Python<'_>,
        contents: &[u8],
        source: &str,
        special_tokens: Vec<(String, Rank)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let inner = detached(py, || {
            Encoder::from_tiktoken(contents, source, special_tokens, pattern)
        })?;
        Ok(PyCoreBPE::wrap(inner))
    }

    /// An encoder for a HuggingFace `tokenizer.json` (its text; see `crate::pipeline`).
    #[staticmethod]
    fn from_hf_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        let inner = detached(py, || crate::pipeline::encoder_from_json(json))?;
        Ok(PyCoreBPE::wrap(inner))
    }

    /// A HuggingFace pipeline's added tokens as HF numbers them: (text, id, special).
    fn hf_added_tokens(&self) -> Vec<(String, u32, bool)> {
        self.inner
            .hf
            .as_ref()
            .map(|h| h.added_tokens())
            .unwrap_or_default()
    }

    /// A HuggingFace pipeline's `post_processor` as JSON text (`None` for other encoders).
    fn hf_post_processor(&self) -> Option<String> {
        self.inner.hf.as_ref().map(|h| h.post_processor.clone())
    }

    /// How many leading spaces a HuggingFace pipeline's decoder strips (0 for other encoders).
    fn hf_decode_strip(&self) -> usize {
        self.inner.hf.as_ref().map_or(0, |h| h.decode_strip)
    }

    /// `text` through a HuggingFace pipeline's normalizer (as it is, without one).
    fn hf_normalize(&self, text: &str) -> String {
        match self.inner.hf.as_ref() {
            Some(h) => h.normalize(text),
            None => text.to_owned(),
        }
    }

    /// The ids a HuggingFace pipeline's decoder decodes otherwise when they come first, as
    /// (id, bytes then, length of their bytes elsewhere) (empty for other encoders).
    fn hf_decode_first<'py>(&self, py: Python<'py>) -> Vec<(u32, Bound<'py, PyBytes>, usize)> {
        self.inner
            .hf
            .as_ref()
            .map_or_else(Vec::new, |h| decode_table(py, &h.decode_first))
    }

    /// The ids a HuggingFace pipeline's decoder decodes otherwise when they come last, as
    /// (id, bytes then, length of their bytes elsewhere) (empty for other encoders).
    fn hf_decode_last<'py>(&self, py: Python<'py>) -> Vec<(u32, Bound<'py, PyBytes>, usize)> {
        self.inner
            .hf
            .as_ref()
            .map_or_else(Vec::new, |h| decode_table(py, &h.decode_last))
    }

    /// Whether a file cut where `last_file_cut` cuts encodes, a part at a time (`continues`
    /// after the first), to the whole's ids (`Encoder::file_cuts_apply`).
    fn file_cuts_apply(&self) -> bool {
        self.inner.file_cuts_apply()
    }

    /// The last place in `data[start:]` (`bytes` or a `bytearray` that starts a text or at a
    /// cut) where this encoding's text may be cut, or 0 (`Encoder::last_file_cut`: the
    /// module's `last_file_cut`, or the pipeline's).
    #[pyo3(signature = (data, start = 0))]
    fn last_file_cut(&self, data: &Bound<'_, PyAny>, start: usize) -> PyResult<usize> {
        super::patterns::with_bytes(data, |b| self.inner.last_file_cut(b, start))
    }

    /// The paths a HuggingFace pipeline runs on (empty for other encoders).
    fn hf_paths(&self) -> Vec<&'static str> {
        self.inner
            .hf
            .as_ref()
            .map(|h| h.paths())
            .unwrap_or_default()
    }

    /// HF's `encode(text, add_special_tokens=False)` as (ids, char offsets, word ids).
    #[allow(clippy::type_complexity)]
    fn encode_hf_detail<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>, Bound<'py, PyList>)> {
        let hf = self.pipeline()?;
        let detail = detached(py, || hf.encode_detail(&self.inner, text))?;
        let (ids, offsets, words) = split_detail(&detail);
        Ok((
            ints::id_list(py, &ids)?,
            ints::offset_list(py, &offsets)?,
            ints::id_list(py, &words)?,
        ))
    }

    /// `encode_hf_detail(text)` with each token's text, `token_texts[id]` (the HF face's
    /// table): (ids, tokens, char offsets, word ids).
    #[allow(clippy::type_complexity)]
    fn encode_hf_face<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        token_texts: &Bound<'py, PyList>,
    ) -> PyResult<(
        Bound<'py, PyList>,
        Bound<'py, PyList>,
        Bound<'py, PyList>,
        Bound<'py, PyList>,
    )> {
        let hf = self.pipeline()?;
        let detail = detached(py, || hf.encode_detail(&self.inner, text))?;
        let [ids, tokens, offsets, words] = face_lists(py, token_texts, &detail)?;
        Ok((ids, tokens, offsets, words))
    }

    /// `[encode_hf_face(t, token_texts) for t in texts]` (as tuples), the texts encoded on
    /// `num_threads` threads with the GIL released while this thread builds the lists of the
    /// ones done (see `encode_lists`).
    fn encode_hf_face_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        token_texts: &Bound<'py, PyList>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let hf = self.pipeline()?;
        let threads = threads_for(&texts, num_threads);
        let encode = |t: &str| hf.encode_detail(&self.inner, t);
        encode_objects(py, &texts, threads, encode, |detail| {
            Ok(PyTuple::new(py, face_lists(py, token_texts, &detail)?)?.into_any())
        })
    }

    /// The tokens of `encode_hf_detail(text)` whose HF token text is not their id's (a
    /// Unigram model's unknown pieces: the text they cover), as (index, text).
    fn encode_hf_unknown_texts(
        &self,
        py: Python<'_>,
        text: &str,
    ) -> PyResult<Vec<(usize, String)>> {
        let hf = self.pipeline()?;
        let texts = detached(py, || {
            let mut texts = Vec::new();
            hf.encode_detail_with(&self.inner, text, Some(&mut texts))?;
            Ok::<_, Error>(texts)
        })?;
        Ok(texts)
    }

    /// `{token bytes: rank}` of the ordinary tokens (built on request).
    fn mergeable_ranks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let vocab = &self.inner.vocab;
        let d = PyDict::new(py);
        for r in 0..vocab.n_ids() as Rank {
            if let Some(b) = vocab.ordinary_bytes(r) {
                d.set_item(PyBytes::new(py, b), r)?;
            }
        }
        Ok(d)
    }

    /// Number of ordinary tokens.
    fn n_ordinary(&self) -> usize {
        self.inner.vocab.n_ordinary()
    }

    /// The largest ordinary rank (ordinary tokens only).
    fn max_ordinary_rank(&self) -> Option<Rank> {
        let vocab = &self.inner.vocab;
        (0..vocab.n_ids() as Rank)
            .rev()
            .find(|&r| vocab.ordinary_bytes(r).is_some())
    }

    /// The largest id with bytes: an ordinary, special or decode-only token's (`from_hf`'s
    /// non-special added tokens outside the model's vocab are decode-only).
    fn max_token_id(&self) -> Option<Rank> {
        self.inner.vocab.max_id()
    }

    fn count(
        &self,
        py: Python<'_>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        detached_polled(py, || enc.count(text, allowed.as_allowed()))
    }

    fn count_batch(
        &self,
        py: Python<'_>,
        texts: Vec<PyBackedStr>,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
    ) -> PyResult<Vec<usize>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let mut poll = SignalPoll::new();
        let counts = detached(py, || {
            let a = allowed.as_allowed();
            batch(&texts, threads_for(&texts, num_threads), &mut poll, |t| {
                enc.count(t, a)
            })
        });
        poll.stash.finish(counts)
    }

    /// A batch as one flat id array plus offsets (`ids[offsets[i]..offsets[i + 1]]` is text
    /// i), for pipelines that don't want a Python list per text. Both arrays take over the
    /// Rust buffers: no copy.
    fn encode_batch_to_numpy<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
    ) -> PyResult<FlatBatch<'py>> {
        numpy_api(py)?;
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let mut poll = SignalPoll::new();
        let flat = detached(py, || {
            let a = allowed.as_allowed();
            let parts = batch(&texts, threads_for(&texts, num_threads), &mut poll, |t| {
                enc.encode(t, a)
            })?;
            let total = parts.iter().map(Vec::len).sum();
            let mut ids = Vec::with_capacity(total);
            let mut offsets = Vec::with_capacity(parts.len() + 1);
            offsets.push(0i64);
            for p in parts {
                ids.extend_from_slice(&p);
                offsets.push(ids.len() as i64);
            }
            Ok((ids, offsets))
        });
        let (ids, offsets) = poll.stash.finish(flat)?;
        Ok((PyArray1::from_vec(py, ids), PyArray1::from_vec(py, offsets)))
    }

    /// The documents of a JSON Lines block (whole lines: `field` of each non-blank one) as
    /// `encode_batch_to_numpy` gives them, or `None` if any line needs the Python reader
    /// (`py/data.rs`).
    ///
    /// With `bos`/`eot`, each document has that id before/after it (the offsets include
    /// them), and with `dtype="uint16"` the ids are `uint16` (an id that does not fit is a
    /// `ValueError`): the layout the data job writes into its shards.
    #[pyo3(signature = (block, field, allowed_special, num_threads, bos=None, eot=None, dtype="uint32"))]
    #[allow(clippy::too_many_arguments)]
    fn encode_jsonl_block<'py>(
        &self,
        py: Python<'py>,
        block: &[u8],
        field: &str,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
        bos: Option<Rank>,
        eot: Option<Rank>,
        dtype: &str,
    ) -> PyResult<Option<FlatArrays<'py>>> {
        let layout = Layout::new(bos, eot, dtype)?;
        let allowed = self.allowed(allowed_special)?;
        let a = allowed.as_allowed();
        super::data::encode_jsonl_block(py, &self.inner, a, block, field, num_threads, layout)
    }

    /// The values of an Arrow string or binary array without nulls, from its buffers, as
    /// `encode_batch_to_numpy` gives them, or `None` if any needs the Python reader
    /// (`py/data.rs`). `bos`, `eot` and `dtype` as for `encode_jsonl_block`.
    #[pyo3(signature = (offsets, data, wide, first, len, allowed_special, num_threads, bos=None, eot=None, dtype="uint32"))]
    #[allow(clippy::too_many_arguments)]
    fn encode_arrow_values<'py>(
        &self,
        py: Python<'py>,
        offsets: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        wide: bool,
        first: usize,
        len: usize,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
        bos: Option<Rank>,
        eot: Option<Rank>,
        dtype: &str,
    ) -> PyResult<Option<FlatArrays<'py>>> {
        let layout = Layout::new(bos, eot, dtype)?;
        let allowed = self.allowed(allowed_special)?;
        let a = allowed.as_allowed();
        let enc = &self.inner;
        let values = super::data::ArrowArgs {
            offsets,
            data,
            wide,
            first,
            len,
        };
        super::data::encode_arrow_values(py, enc, a, values, num_threads, layout)
    }

    /// Builds now the tables encoding builds at its first need, and the int objects of every
    /// ordinary id, so that processes forked after this share them.
    fn build_tables(&self, py: Python<'_>) -> PyResult<()> {
        let enc = &self.inner;
        detached(py, || {
            enc.build_tables();
            Ok(())
        })?;
        if let Some(top) = enc.vocab.max_ordinary_id() {
            ints::make_id_ints(py, top);
        }
        Ok(())
    }

    /// Which of `build_tables`'s tables are built: `(name, built)` pairs, for tests.
    fn tables_built(&self) -> Vec<(&'static str, bool)> {
        self.inner.tables_built()
    }

    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let enc = &self.inner;
        let ids = detached_polled(py, || enc.encode_ordinary(text))?;
        ints::id_list(py, &ids)
    }

    /// `encode_ordinary(text)`, or `None` if the text of a special token occurs in it.
    fn encode_unless_special<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let enc = &self.inner;
        match detached_polled(py, || enc.encode_unless_special(text))? {
            Some(ids) => ints::id_list(py, &ids).map(Some),
            None => Ok(None),
        }
    }

    /// Does the text of any special token occur in any of `texts`?
    fn holds_special_text(&self, py: Python<'_>, texts: Vec<PyBackedStr>) -> PyResult<bool> {
        let enc = &self.inner;
        detached(py, || Ok(texts.iter().any(|t| enc.holds_special_text(t))))
    }

    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let ids = detached_polled(py, || enc.encode(text, allowed.as_allowed()))?;
        ints::id_list(py, &ids)
    }

    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<Rank>>> {
        numpy_api(py)?;
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let ids = detached_polled(py, || enc.encode(text, allowed.as_allowed()))?;
        // Takes ownership of the Vec: the array's memory is the encoder's output, no copy.
        Ok(PyArray1::from_vec(py, ids))
    }

    /// `encode_ordinary(text)` as a `numpy.uint32` array (the `encode_to_numpy` of a call
    /// that allows and disallows no special token: no set to convert, one call).
    fn encode_ordinary_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<Bound<'py, PyArray1<Rank>>> {
        numpy_api(py)?;
        let enc = &self.inner;
        let ids = detached_polled(py, || enc.encode_ordinary(text))?;
        Ok(PyArray1::from_vec(py, ids))
    }

    /// The ids of `data`, a part of a file as UTF-8 bytes, as the bytes of native-endian
    /// 4-byte ints (for `array('I').frombytes`): the command line's way through a large
    /// file, with no `str` of the text, no int object an id and no list (see [`on_utf8`]).
    /// `continues`: the part is not the file's first (see `Encoder::encode_part`).
    #[pyo3(signature = (data, allow_special, continues=false))]
    fn encode_utf8_to_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        allow_special: bool,
        continues: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let enc = &self.inner;
        let ids = on_utf8(py, enc, data, allow_special, |text, allowed| {
            enc.encode_part(text, allowed, continues)
        })?;
        packed_ids(py, &ids)
    }

    /// How many ids `data` (as in [`Self::encode_utf8_to_bytes`]) encodes to.
    #[pyo3(signature = (data, allow_special, continues=false))]
    fn count_utf8(
        &self,
        py: Python<'_>,
        data: &[u8],
        allow_special: bool,
        continues: bool,
    ) -> PyResult<usize> {
        let enc = &self.inner;
        on_utf8(py, enc, data, allow_special, |text, allowed| {
            enc.count_part(text, allowed, continues)
        })
    }

    fn encode_ordinary_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let enc = &self.inner;
        encode_lists(py, &texts, threads_for(&texts, num_threads), |t| {
            enc.encode_ordinary(t)
        })
    }

    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let a = allowed.as_allowed();
        encode_lists(py, &texts, threads_for(&texts, num_threads), |t| {
            enc.encode(t, a)
        })
    }

    fn encode_with_unstable<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let (tokens, completions) =
            detached_polled(py, || enc.encode_with_unstable(text, allowed.as_allowed()))?;
        let completions: Vec<Vec<Rank>> = completions.into_iter().collect();
        (tokens, completions).into_pyobject(py)
    }

    fn encode_single_token(&self, piece: &[u8]) -> PyResult<Rank> {
        Ok(self.inner.encode_single_token(piece)?)
    }

    fn encode_single_piece(&self, py: Python<'_>, piece: &[u8]) -> PyResult<Vec<Rank>> {
        let enc = &self.inner;
        detached_polled(py, || enc.encode_single_piece(piece))
    }

    fn encode_bytes<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let enc = &self.inner;
        let ids = detached_polled(py, || enc.encode_bytes(bytes))?;
        ints::id_list(py, &ids)
    }

    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        tokens: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let enc = &self.inner;
        if let Some(parts) = decode_list_shared(enc, tokens)? {
            return joined_bytes(py, &parts);
        }
        DECODE_SCRATCH.with(|scratch| {
            // Re-entry (not possible from Python, which holds one call per thread) would just
            // use fresh buffers.
            let mut fresh = DecodeScratch {
                ids: Vec::new(),
                bytes: Vec::new(),
            };
            let mut guard = scratch.try_borrow_mut().ok();
            let s = guard.as_deref_mut().unwrap_or(&mut fresh);
            // All ids are read before any is looked up (tiktoken's order of errors), and in a
            // loop of their own: reading an item chases a pointer to its int object, decoding
            // an id reads its slot in a table of megabytes, and apart each loop keeps many of
            // those loads in flight, where one fused loop waited on each in turn.
            if !ids_read_directly(tokens, &mut s.ids) {
                s.ids = super::seq::ids(tokens)?;
            }
            let (ids, bytes) = (&s.ids, &mut s.bytes);
            bytes.clear();
            let out = if ids.len() < DECODE_SHARED_MIN {
                decode_holding_gil(enc, ids, bytes)?;
                PyBytes::new(py, bytes)
            } else if shared_decode(ids.len()) {
                let parts = detached_polled(py, || {
                    let pieces: Vec<&[Rank]> = ids.chunks(DECODE_PIECE).collect();
                    batch_map(&pieces, cores(), |ids| enc.decode_bytes(ids))
                })?;
                joined_bytes(py, &parts)?
            } else {
                detached_polled(py, || enc.decode_into(ids, bytes))?;
                PyBytes::new(py, bytes)
            };
            if s.ids.capacity() * 4 > SCRATCH_KEEP || s.bytes.capacity() > SCRATCH_KEEP {
                *s = DecodeScratch {
                    ids: Vec::new(),
                    bytes: Vec::new(),
                };
            }
            Ok(out)
        })
    }

    fn decode_bytes_batch<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        num_threads: usize,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let enc = &self.inner;
        let batch = id_lists(batch)?;
        let n_ids: usize = batch.iter().map(Vec::len).sum();
        let threads = threads_for_ids(n_ids, num_threads);
        let out = detached(py, || batch_map(&batch, threads, |t| enc.decode_bytes(t)))?;
        Ok(out.iter().map(|b| PyBytes::new(py, b)).collect())
    }

    fn decode_single_token_bytes<'py>(
        &self,
        py: Python<'py>,
        token: Rank,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.token_bytes(token) {
            Some(b) => Ok(PyBytes::new(py, b)),
            // tiktoken's `KeyError` for one token: the id as a string.
            None => Err(PyKeyError::new_err(token.to_string())),
        }
    }

    fn token_byte_values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let vocab = &self.inner.vocab;
        PyList::new(
            py,
            vocab
                .sorted_ranks()
                .iter()
                .map(|&r| PyBytes::new(py, vocab.ordinary_bytes(r).unwrap_or_default())),
        )
    }
}
