//! Python ints for ids, both ways: reading ids out of a list of ints, and making the list of
//! ints that `encode` returns.
//!
//! Both read or lay out CPython's int objects directly where the interpreter's layout is
//! known (see [`IntLayout`]), and fall back to the C API everywhere else. This is the one
//! place in the binding layer that knows what an `int` looks like in memory.

use crate::vocab::Rank;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

/// Where this interpreter keeps a small `int`'s value, so that ids can be read straight from
/// the object instead of through a `PyLong_AsUnsignedLong` call per item (that call was half
/// of `decode_bytes`'s time).
///
/// On CPython with 30-bit digits, the machine word after the object header is followed by
/// the first digit (a `u32`), and the word says how to read it:
/// - up to 3.11 it is `ob_size`: the digit count, negative for a negative int;
/// - from 3.12 it is `lv_tag`: the digit count shifted left by 3, and the sign in the low two
///   bits (0 positive, 1 zero, 2 negative); bit 2 is reserved for an immortality flag.
///
/// Both are CPython's `Include/cpython/longintrepr.h`; orjson reads ints the same way.
/// Other interpreters, 15-bit digits and versions after the last one checked use the C API.
#[derive(Clone, Copy)]
pub(super) enum IntLayout {
    ObSize,
    LvTag,
    CApi,
}

static INT_LAYOUT: OnceLock<IntLayout> = OnceLock::new();

fn int_layout(py: Python<'_>) -> IntLayout {
    *INT_LAYOUT.get_or_init(|| detect_int_layout(py).unwrap_or(IntLayout::CApi))
}

fn detect_int_layout(py: Python<'_>) -> PyResult<IntLayout> {
    let sys = py.import("sys")?;
    let implementation: String = sys.getattr("implementation")?.getattr("name")?.extract()?;
    let int_info = sys.getattr("int_info")?;
    let bits: u32 = int_info.getattr("bits_per_digit")?.extract()?;
    let digit_size: u32 = int_info.getattr("sizeof_digit")?.extract()?;
    if implementation != "cpython" || bits != 30 || digit_size != 4 {
        return Ok(IntLayout::CApi);
    }
    let v = py.version_info();
    Ok(if v < (3, 12) {
        IntLayout::ObSize
    } else if v < (3, 15) {
        IntLayout::LvTag
    } else {
        IntLayout::CApi
    })
}

// `IntLayout` as const-generic parameters, so that each reading loop is compiled once per
// layout with no per-item branch on it.
const OB_SIZE: u8 = 0;
const LV_TAG: u8 = 1;
const C_API: u8 = 2;

/// Calls `f` with each item of `list` as an id, in order. Stops and returns `false` at the
/// first item that is not an exact `int` fitting in a `u32`, or as soon as `f` returns
/// `false`.
#[inline(always)]
pub(super) fn each_list_id(list: &Bound<'_, PyList>, f: impl FnMut(Rank) -> bool) -> bool {
    match int_layout(list.py()) {
        IntLayout::ObSize => each_id::<OB_SIZE>(list, f),
        IntLayout::LvTag => each_id::<LV_TAG>(list, f),
        IntLayout::CApi => each_id::<C_API>(list, f),
    }
}

#[inline(always)]
fn each_id<const LAYOUT: u8>(list: &Bound<'_, PyList>, mut f: impl FnMut(Rank) -> bool) -> bool {
    for i in 0..list.len() {
        match list_id::<LAYOUT>(list, i) {
            Some(id) if f(id) => {}
            _ => return false,
        }
    }
    true
}

/// The `i`th item of `list` if it is an exact `int` that fits in a `u32`.
#[inline(always)]
fn list_id<const LAYOUT: u8>(list: &Bound<'_, PyList>, i: usize) -> Option<Rank> {
    // SAFETY: the caller holds the GIL (`list` is a `Bound`) and checks `i < list.len()`, and
    // nothing here runs Python code (`PyLong_AsUnsignedLong` on an exact `int` only reads
    // it), so the list still has that item; `PyList_GET_ITEM` returns a borrowed pointer to a
    // live object the list owns, and we only read through it.
    //
    // The direct reads: once `PyLong_CheckExact` holds, the object is a `PyLongObject` (ints
    // are immutable, so nothing changes it while we read). Its layout is `PyObject` (whose
    // size pyo3's `ffi::PyObject` has for the interpreter this module was built for, free-
    // threaded or not), then one `usize` word (`ob_size` or `lv_tag`), then the digits;
    // `IntLayout` is only `ObSize`/`LvTag` on the CPython versions and digit size where that
    // holds (see `detect_int_layout`). The header is pointer-sized, so the word is aligned,
    // and the digit after it is 4-byte aligned. CPython always allocates at least one digit,
    // and the digit is only used when the word says there is exactly one.
    let (exact, v) = unsafe {
        let item = pyo3::ffi::PyList_GET_ITEM(list.as_ptr(), i as pyo3::ffi::Py_ssize_t);
        if pyo3::ffi::PyLong_CheckExact(item) == 0 {
            (false, 0)
        } else {
            let word_ptr = item
                .cast::<u8>()
                .add(std::mem::size_of::<pyo3::ffi::PyObject>());
            let word = word_ptr.cast::<usize>().read();
            let digit = || {
                word_ptr
                    .add(std::mem::size_of::<usize>())
                    .cast::<u32>()
                    .read()
            };
            match LAYOUT {
                OB_SIZE if word == 0 => return Some(0),
                OB_SIZE if word == 1 => return Some(digit()),
                LV_TAG if word < 16 && word & 3 == 1 => return Some(0),
                LV_TAG if word < 16 && word & 3 == 0 => return Some(digit()),
                _ => (true, pyo3::ffi::PyLong_AsUnsignedLong(item)),
            }
        }
    };
    if !exact || v > Rank::MAX as std::ffi::c_ulong {
        // A negative int sets OverflowError (and returns the all-ones error value): drop it;
        // the general extraction raises the proper error.
        let _ = PyErr::take(list.py());
        return None;
    }
    Some(v as Rank)
}

/// `ids` as a Python list of ints.
///
/// Each id is one shared, never-freed int object (see [`IdInt`]), so a list costs one
/// pointer store per id: no allocation, no free when the list dies, and the objects of the
/// most frequent ids (the lowest ranks) sit side by side in memory. The list's references to
/// them are not counted (see `IdInt` for why that is sound): before 3.12, counting them was
/// a write to each id's object, and 80% of this function's samples in a profile of English
/// text sat on that write. (Part of that moves to the list's free, whose decrement now meets
/// the object first; the encode loop came out 1.02-1.04x as fast.) Where the layout is
/// unknown the ints are made by the C API.
pub(super) fn id_list<'py>(py: Python<'py>, ids: &[Rank]) -> PyResult<Bound<'py, PyList>> {
    let spec = id_int_spec(py);
    // SAFETY: `PyList_New` gives a new list of `ids.len()` NULL items (or NULL with an
    // exception set, handled at once); `from_owned_ptr` takes over that one reference, so the
    // list is freed (NULL items included) if we return early. Each item is set once, at an
    // index below the length, with either a live id int whose reference count the list's
    // eventual `Py_DECREF` cannot bring to zero (see `IdInt`), or a new reference from
    // `PyLong_FromUnsignedLong`. The GIL is held (`py`).
    unsafe {
        let len = ffi::Py_ssize_t::try_from(ids.len())
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("too many ids for a list"))?;
        let raw = ffi::PyList_New(len);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        let list = Bound::from_owned_ptr(py, raw).cast_into_unchecked::<PyList>();
        for (i, &id) in ids.iter().enumerate() {
            let item = match spec.and_then(|s| id_int(s, id)) {
                Some(obj) => obj,
                None => {
                    let obj = ffi::PyLong_FromUnsignedLong(id.into());
                    if obj.is_null() {
                        return Err(PyErr::fetch(py));
                    }
                    obj
                }
            };
            ffi::PyList_SET_ITEM(raw, i as ffi::Py_ssize_t, item);
        }
        Ok(list)
    }
}

/// An `int` object for one id, laid out as CPython lays out a one-digit int: the object
/// header (reference count, type), the size word (`ob_size` or `lv_tag`, see [`IntLayout`])
/// and the digit.
///
/// These live in chunks of [`CHUNK`] consecutive ids that are made on first use and never
/// freed, so an object handed to Python stays valid however long Python keeps it. Its
/// reference count never reaches zero, so CPython never deallocates it:
/// - from 3.12 it is CPython's own immortal value: `Py_INCREF`/`Py_DECREF` leave it alone,
///   so [`id_list`] may skip the increment for the references it hands out, as CPython
///   itself does for immortal objects;
/// - up to 3.11 it starts at 2^62. Python's own increments are matched by decrements; the
///   only unmatched decrements are one per list slot [`id_list`] filled without counting.
///   Reaching zero takes 2^62 such slots in one process: at one a nanosecond, 146 years.
///   Nor can it overflow: the matched increments outstanding at any moment are live
///   references, fewer than 2^61 (8-byte pointers in a 64-bit address space).
///
/// Ints are not tracked by the garbage collector, so no GC header precedes the object;
/// CPython's own small ints are likewise not allocated by its allocator.
#[repr(C)]
struct IdInt {
    ob_refcnt: isize,
    ob_type: *mut ffi::PyTypeObject,
    size_word: usize,
    digit: u32,
}

/// Ids per chunk: 4,096 objects, 128 KiB.
const CHUNK: usize = 1 << 12;
/// Ids from here up (only special tokens can have them) get fresh ints.
const ID_INT_LIMIT: usize = 1 << 21;

static CHUNKS: [AtomicPtr<IdInt>; ID_INT_LIMIT / CHUNK] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; ID_INT_LIMIT / CHUNK];

/// What an id int looks like on this interpreter.
#[derive(Clone, Copy)]
struct IdIntSpec {
    layout: IntLayout,
    refcnt: isize,
}

static ID_INT_SPEC: OnceLock<Option<IdIntSpec>> = OnceLock::new();

/// `None` where ids get C-API ints: other interpreters and layouts, 32-bit targets, and
/// builds whose object header is not the plain 16-byte (reference count, type) pair —
/// free-threaded builds and `Py_TRACE_REFS` builds.
fn id_int_spec(py: Python<'_>) -> Option<IdIntSpec> {
    *ID_INT_SPEC.get_or_init(|| {
        if std::mem::size_of::<ffi::PyObject>() != 16 || std::mem::size_of::<usize>() != 8 {
            return None;
        }
        let layout = int_layout(py);
        let refcnt = match layout {
            IntLayout::ObSize => 1 << 62,
            // `_Py_IMMORTAL_REFCNT` of 3.12 and 3.13.
            IntLayout::LvTag if py.version_info() < (3, 14) => 0xFFFF_FFFF,
            // `_Py_IMMORTAL_INITIAL_REFCNT` of 3.14.
            IntLayout::LvTag => 3 << 30,
            IntLayout::CApi => return None,
        };
        Some(IdIntSpec { layout, refcnt })
    })
}

/// The shared int object of `id`, making its chunk if this is the chunk's first use; `None`
/// past [`ID_INT_LIMIT`].
#[inline(always)]
fn id_int(spec: IdIntSpec, id: Rank) -> Option<*mut ffi::PyObject> {
    let id = id as usize;
    let slot = CHUNKS.get(id / CHUNK)?;
    let mut chunk = slot.load(Ordering::Acquire);
    if chunk.is_null() {
        chunk = make_chunk(spec, slot, id / CHUNK);
    }
    // SAFETY: a non-null chunk pointer is a leaked allocation of `CHUNK` initialised
    // `IdInt`s (see `make_chunk`), and `id % CHUNK < CHUNK`.
    Some(unsafe { chunk.add(id % CHUNK) }.cast())
}

#[cold]
#[inline(never)]
fn make_chunk(spec: IdIntSpec, slot: &AtomicPtr<IdInt>, index: usize) -> *mut IdInt {
    // Only the address of libpython's static type object is taken (safe since Rust 1.82).
    let ob_type = std::ptr::addr_of_mut!(ffi::PyLong_Type);
    let ints: Box<[IdInt]> = (0..CHUNK)
        .map(|i| {
            let value = (index * CHUNK + i) as u32; // < 2^21: one 30-bit digit
            let size_word = match (spec.layout, value) {
                (IntLayout::ObSize, 0) => 0,
                (IntLayout::ObSize, _) => 1,
                (_, 0) => 1,      // lv_tag: no digits, sign "zero"
                (_, _) => 1 << 3, // lv_tag: one digit, sign "positive"
            };
            IdInt {
                ob_refcnt: spec.refcnt,
                ob_type,
                size_word,
                digit: value,
            }
        })
        .collect();
    let fresh = Box::into_raw(ints).cast::<IdInt>();
    match slot.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => fresh, // leaked on purpose: Python may hold these objects until it exits
        Err(installed) => {
            // Another thread made this chunk first and no one has seen ours: free it.
            // SAFETY: `fresh` came from `Box::into_raw` of a `CHUNK`-long boxed slice above.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, CHUNK)) });
            installed
        }
    }
}
