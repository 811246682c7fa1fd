//! Python ints for ids, both ways: reading ids out of a list of ints, and making the list of
//! ints that `encode` returns.
//!
//! Both read or lay out CPython's int objects directly where the interpreter's layout is
//! known (see [`IntLayout`]), and fall back to the C API everywhere else. This is the one
//! place in the binding layer that knows what an `int` looks like in memory.

use crate::vocab::Rank;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

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

/// `PyOnceLock`, not `OnceLock`: the look-up runs Python (`import sys`, which calls
/// `builtins.__import__`, a Python function wherever an import hook replaced it). Python may
/// hand the GIL to another thread in the middle, and with `OnceLock` that thread would wait
/// for the cell while holding the GIL the first thread needs to finish: a deadlock on the
/// first `encode` of two threads. `PyOnceLock` waits with the GIL released.
static INT_LAYOUT: PyOnceLock<IntLayout> = PyOnceLock::new();

fn int_layout(py: Python<'_>) -> IntLayout {
    *INT_LAYOUT.get_or_init(py, || detect_int_layout(py).unwrap_or(IntLayout::CApi))
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

/// The items of `list` as ids, into `ids` (cleared first). Returns `false`, leaving `ids`
/// unspecified, at the first item that is not an exact `int` fitting in a `u32`.
///
/// Read first from the list's item array, fetched once ([`SharedItems`]); only a list with
/// an item that needs the C API is read again, item by item. That loop fetches the array's
/// address again for every item, as each id written might have changed it; read from the
/// array fetched once, decoding is ~5% faster (see docs/engine.md).
#[inline(always)]
pub(super) fn list_ids(list: &Bound<'_, PyList>, ids: &mut Vec<Rank>) -> bool {
    // SAFETY: this thread holds the GIL (`list` is a `Bound`) and runs no Python code while
    // `items` lives (this statement).
    if unsafe { SharedItems::new(list) }.is_some_and(|items| items.read(0..list.len(), ids)) {
        return true;
    }
    match int_layout(list.py()) {
        IntLayout::ObSize => read_ids::<OB_SIZE>(list, ids),
        IntLayout::LvTag => read_ids::<LV_TAG>(list, ids),
        IntLayout::CApi => read_ids::<C_API>(list, ids),
    }
}

#[inline(always)]
fn read_ids<const LAYOUT: u8>(list: &Bound<'_, PyList>, ids: &mut Vec<Rank>) -> bool {
    let region = REGION.get().and_then(Option::as_ref);
    fill_ids(ids, list.len(), |i| list_id::<LAYOUT>(list, i, region))
}

/// `item(i)` for each `i` in `0..n`, into `ids` (cleared first); `false`, leaving `ids`
/// unspecified, at the first `None`.
///
/// The ids are written into the vector's spare capacity, not pushed: with a push per item the
/// vector's length made a chain of stores and loads through memory from one item to the
/// next, where the slots let the reads of the items overlap. (Zeroing the slots first would
/// be a `memset` of 4 bytes an id.)
#[inline(always)]
fn fill_ids(ids: &mut Vec<Rank>, n: usize, item: impl Fn(usize) -> Option<Rank>) -> bool {
    ids.clear();
    ids.reserve(n);
    for (i, slot) in ids.spare_capacity_mut()[..n].iter_mut().enumerate() {
        match item(i) {
            Some(id) => {
                slot.write(id);
            }
            None => return false,
        }
    }
    // SAFETY: `reserve` made room for `n` ids, and the loop wrote each of the first `n` slots
    // of the spare capacity (it returns before this at the first `None`).
    unsafe { ids.set_len(n) };
    true
}

/// The `i`th item of `list` if it is an exact `int` that fits in a `u32`: read by
/// [`quick_id`] where it can be, else through the C API.
#[inline(always)]
fn list_id<const LAYOUT: u8>(
    list: &Bound<'_, PyList>,
    i: usize,
    region: Option<&Region>,
) -> Option<Rank> {
    // SAFETY: the caller holds the GIL (`list` is a `Bound`) and checks `i < list.len()`, and
    // nothing here runs Python code (`PyLong_AsUnsignedLong` on an exact `int` only reads
    // it), so the list still has that item; `PyList_GET_ITEM` returns a borrowed pointer to a
    // live object the list owns, and we only read through it (see `quick_id` for its reads).
    let (exact, v) = unsafe {
        let item = ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t);
        if let Some(id) = quick_id::<LAYOUT>(item, region) {
            return Some(id);
        }
        if ffi::PyLong_CheckExact(item) == 0 {
            (false, 0)
        } else {
            (true, ffi::PyLong_AsUnsignedLong(item))
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

/// The id `item` holds, read from memory alone, without the C API: an id int in `region`
/// from its address, an exact `int` of at most one digit (every value below 2^30) from its
/// layout. `None` for anything else, and always for `C_API`'s layout (but for id ints).
///
/// # Safety
/// `item` points to a live object that nothing writes while this reads it.
///
/// The reads: once `PyLong_CheckExact` holds, the object is a `PyLongObject` (ints are
/// immutable). Its layout is `PyObject` (whose size pyo3's `ffi::PyObject` has for the
/// interpreter this module was built for, free-threaded or not), then one `usize` word
/// (`ob_size` or `lv_tag`), then the digits; `IntLayout` is only `ObSize`/`LvTag` on the
/// CPython versions and digit size where that holds (see `detect_int_layout`). The header is
/// pointer-sized, so the word is aligned, and the digit after it is 4-byte aligned. CPython
/// always allocates at least one digit, and the digit is only used when the word says there
/// is exactly one. An id int (an item inside `region`) is not read at all.
#[inline(always)]
unsafe fn quick_id<const LAYOUT: u8>(
    item: *mut ffi::PyObject,
    region: Option<&Region>,
) -> Option<Rank> {
    if let Some(id) = region.and_then(|r| r.id_of(item)) {
        return Some(id);
    }
    if LAYOUT == C_API || ffi::PyLong_CheckExact(item) == 0 {
        return None;
    }
    let word_ptr = item.cast::<u8>().add(std::mem::size_of::<ffi::PyObject>());
    let word = word_ptr.cast::<usize>().read();
    let digit = || {
        word_ptr
            .add(std::mem::size_of::<usize>())
            .cast::<u32>()
            .read()
    };
    match LAYOUT {
        OB_SIZE if word == 0 => Some(0),
        OB_SIZE if word == 1 => Some(digit()),
        LV_TAG if word < 16 && word & 3 == 1 => Some(0),
        LV_TAG if word < 16 && word & 3 == 0 => Some(digit()),
        _ => None,
    }
}

/// A list's items, for several threads to read as ids at once, from memory alone
/// ([`quick_id`]): the C API, which needs the GIL, is never called.
pub(super) struct SharedItems<'a> {
    items: &'a [*mut ffi::PyObject],
    region: Option<&'static Region>,
    layout: IntLayout,
}

// SAFETY: a `SharedItems` only reads: the item pointers, and through them the objects
// (`quick_id`). `SharedItems::new`'s contract keeps every thread that could write them (by
// running Python code) waiting while any thread holds a `SharedItems`, so the reads race
// with nothing.
unsafe impl Sync for SharedItems<'_> {}

impl<'a> SharedItems<'a> {
    /// `list`'s items; `None` where ints are read through the C API.
    ///
    /// # Safety
    /// While the result, or any reference to it, is in use on any thread, the calling thread
    /// holds the GIL and runs no Python code. Then no thread runs Python code, so nothing
    /// changes the list's items or frees an object it holds. (The module declares that it
    /// uses the GIL, pyo3's default, so a free-threaded interpreter turns the GIL on when it
    /// imports it.)
    pub(super) unsafe fn new(list: &'a Bound<'_, PyList>) -> Option<Self> {
        let layout = int_layout(list.py());
        if matches!(layout, IntLayout::CApi) {
            return None;
        }
        let n = list.len();
        // SAFETY: a list's `ob_item` points to its `len()` item pointers (a list of length 0
        // may have a null `ob_item`, which `from_raw_parts` must not get). The contract keeps
        // them in place and unchanged for `'a`.
        let items = if n == 0 {
            &[][..]
        } else {
            let ob_item = (*list.as_ptr().cast::<ffi::PyListObject>()).ob_item;
            std::slice::from_raw_parts(ob_item.cast_const(), n)
        };
        Some(SharedItems {
            items,
            // Not `region()`, which would make it: with no region, no item is an id int.
            region: REGION.get().and_then(Option::as_ref),
            layout,
        })
    }

    /// Items `range` as ids, into `ids` (cleared first); `false` at the first item that
    /// [`quick_id`] does not read (the caller then reads the list with [`list_ids`]).
    pub(super) fn read(&self, range: std::ops::Range<usize>, ids: &mut Vec<Rank>) -> bool {
        match self.layout {
            IntLayout::ObSize => self.read_as::<OB_SIZE>(range, ids),
            IntLayout::LvTag => self.read_as::<LV_TAG>(range, ids),
            IntLayout::CApi => false,
        }
    }

    fn read_as<const LAYOUT: u8>(
        &self,
        range: std::ops::Range<usize>,
        ids: &mut Vec<Rank>,
    ) -> bool {
        let items = &self.items[range];
        // SAFETY: each item is one of the list's items, live and unwritten (`new`'s contract).
        fill_ids(ids, items.len(), |i| unsafe {
            quick_id::<LAYOUT>(items[i], self.region)
        })
    }
}

/// `ids` as a Python list of ints.
///
/// Each id is one shared, never-freed int object (see [`IdInt`]), so a list costs one
/// pointer store per id: no allocation, no free when the list dies, and the objects of the
/// most frequent ids (the lowest ranks) sit side by side in memory. The list's references to
/// them are not counted (see `IdInt` for why that is sound): before 3.12, counting them is
/// a write to each id's object, most of this function's time in a profile of English text.
/// (Part of that moves to the list's free, whose decrement then meets the object first.)
/// Where the layout is unknown the ints are made by the C API.
///
/// When every id has an object (the usual case), the list's item array is filled in one
/// loop with no branch and no load per item: each item is the region's base plus 32 times
/// the id, which the compiler turns into a few vector instructions for several ids at once.
/// The per-item loop it replaced (a chunk check, a load of the list's item pointer and a
/// store per id) was 14 instructions an id.
pub(super) fn id_list<'py>(py: Python<'py>, ids: &[Rank]) -> PyResult<Bound<'py, PyList>> {
    let shared = id_int_spec(py).and_then(|spec| Some((spec, region()?)));
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
        if let Some((spec, region)) = shared {
            if let Some(top) = ids.iter().copied().max() {
                if region.make_through(spec, top) {
                    // SAFETY (in addition to the above): `raw` is a list (`PyList_New`) of
                    // `len` items, so on CPython its `ob_item` array holds `len` pointers,
                    // all NULL and owned by the list; nothing else sees the new list yet.
                    // Every id is at most `top`, whose chunk and all chunks before it are
                    // made (`make_through`), so each pointer is a made id int.
                    let items = std::slice::from_raw_parts_mut(
                        (*raw.cast::<ffi::PyListObject>()).ob_item,
                        ids.len(),
                    );
                    let base = region.base as usize;
                    for (item, &id) in items.iter_mut().zip(ids) {
                        *item = (base + id as usize * std::mem::size_of::<IdInt>()) as *mut _;
                    }
                    prefetch_objects(items.iter().copied());
                    return Ok(list);
                }
            }
        }
        for (i, &id) in ids.iter().enumerate() {
            let item = match shared.and_then(|(spec, region)| id_int(spec, region, id)) {
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

/// Asks for the cache line of each of `objects`, so that what comes next to each one's count
/// (a list's free decrements it before 3.12 and reads it from 3.12 on; a new reference
/// increments it) finds it in the cache instead of waiting on each miss in turn.
#[inline]
pub(super) fn prefetch_objects(objects: impl Iterator<Item = *mut ffi::PyObject>) {
    #[cfg(target_arch = "x86_64")]
    for object in objects {
        // SAFETY: a prefetch reads nothing and cannot fault, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch(object.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = objects;
}

/// The list of `(start, end)` int tuples that the HF face's offsets are (`encode_hf_detail`).
///
/// Offsets are small numbers met again and again, so each int is the id int of that value
/// where the ids have made it already (a counted reference: the tuple owns it like any
/// other), else a new int; offsets make no id ints (they run to a text's length, which would
/// make chunks that are never freed). Each tuple holds only ints, which refer to nothing, so it can be in no reference
/// cycle: it is untracked by the garbage collector at once, as CPython's collector itself
/// untracks such tuples at its first pass (`_PyTuple_MaybeUntrack`), instead of being
/// traversed by the collections that a few thousand new tuples a call set off.
pub(super) fn offset_list<'py>(
    py: Python<'py>,
    pairs: &[(usize, usize)],
) -> PyResult<Bound<'py, PyList>> {
    let region = id_int_spec(py).and_then(|_| region());
    // SAFETY: the GIL is held (`py`). `int` returns a new (owned) reference or NULL with an
    // exception set: `Py_INCREF` on a made id int (live for the whole process), or
    // `PyLong_FromSize_t`'s new int. `PyList_New`/`PyTuple_New` give new containers of NULL
    // items (or NULL with an exception set, handled at once); `from_owned_ptr` takes the
    // list's reference, so it is freed, NULL items and all, on an early return, and a tuple
    // not yet in the list is released with `Py_DECREF` (its NULL items are skipped). Each
    // item is set once, at an index below the length, with an owned reference it takes over.
    // `PyObject_GC_UnTrack` is called on a tuple that is tracked (a new tuple is) and filled.
    unsafe {
        let int = |v: usize| -> *mut ffi::PyObject {
            match region.and_then(|r| r.made_int(v)) {
                Some(obj) => {
                    ffi::Py_INCREF(obj);
                    obj
                }
                None => ffi::PyLong_FromSize_t(v),
            }
        };
        let len = ffi::Py_ssize_t::try_from(pairs.len()).map_err(|_| {
            pyo3::exceptions::PyOverflowError::new_err("too many offsets for a list")
        })?;
        let raw = ffi::PyList_New(len);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        let list = Bound::from_owned_ptr(py, raw).cast_into_unchecked::<PyList>();
        for (i, &(a, b)) in pairs.iter().enumerate() {
            let t = ffi::PyTuple_New(2);
            if t.is_null() {
                return Err(PyErr::fetch(py));
            }
            for (k, v) in [(0, a), (1, b)] {
                let obj = int(v);
                if obj.is_null() {
                    ffi::Py_DECREF(t);
                    return Err(PyErr::fetch(py));
                }
                ffi::PyTuple_SET_ITEM(t, k, obj);
            }
            ffi::PyObject_GC_UnTrack(t.cast());
            ffi::PyList_SET_ITEM(raw, i as ffi::Py_ssize_t, t);
        }
        Ok(list)
    }
}

/// Makes the id ints of ids `0..=top` now, as the first list holding `top` would (nothing
/// where ids get C-API ints or `top` is past the region's fill limit): `build_tables`.
pub(super) fn make_id_ints(py: Python<'_>, top: Rank) {
    if let (Some(spec), Some(region)) = (id_int_spec(py), region()) {
        region.make_through(spec, top);
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
/// [`id_list`]'s one-loop fill takes lists whose ids are all below this: it makes every
/// chunk up to the largest id, at most 8 MiB (o200k's 200k ids take 6.4).
const FILL_LIMIT: usize = 1 << 18;

/// Where the id ints live: one allocation with room for all [`ID_INT_LIMIT`] of them (64 MiB
/// of address space, of which the system backs only the pages of the chunks made), never
/// freed. The id of an int in it is its offset divided by the object size, so a list of ids
/// can be read without touching the objects (see [`Region::id_of`]).
struct Region {
    base: *mut IdInt,
    /// Per chunk: are its objects written?
    made: [AtomicBool; ID_INT_LIMIT / CHUNK],
    /// Held while a chunk is being written.
    making: Mutex<()>,
    /// Every chunk below this index is made.
    made_below: AtomicUsize,
}

// SAFETY: `base` points to memory owned by the region for the whole process (it is leaked,
// never freed). Objects are written only once per chunk, under `making` and before `made`
// is set (Release); they are read only after `made` is seen set (Acquire) or through a
// pointer that `id_int` handed out after that. So sharing the pointer between threads races
// on nothing.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

/// A plain `OnceLock`: its set-up runs no Python, so no other thread can take the GIL while
/// it runs. Nor can a fork land in the middle of it, or of a chunk's making: both happen only
/// with the GIL held, and Python forks (`os.fork`, `multiprocessing`) with the GIL held too.
static REGION: OnceLock<Option<Region>> = OnceLock::new();

/// The region, allocated at first use; `None` if the allocation failed (then ids get C-API
/// ints).
fn region() -> Option<&'static Region> {
    REGION
        .get_or_init(|| {
            let mut space: Vec<std::mem::MaybeUninit<IdInt>> = Vec::new();
            space.try_reserve_exact(ID_INT_LIMIT).ok()?;
            let base = space.as_mut_ptr().cast::<IdInt>();
            std::mem::forget(space); // leaked on purpose: Python may hold the ints until exit
            Some(Region {
                base,
                made: [const { AtomicBool::new(false) }; ID_INT_LIMIT / CHUNK],
                making: Mutex::new(()),
                made_below: AtomicUsize::new(0),
            })
        })
        .as_ref()
}

impl Region {
    /// The id of `item` if it is one of the id ints, without reading it: its offset in the
    /// region. `None` for any other object.
    #[inline(always)]
    fn id_of(&self, item: *mut ffi::PyObject) -> Option<Rank> {
        let offset = (item as usize).wrapping_sub(self.base as usize);
        let size = std::mem::size_of::<IdInt>();
        // An object inside the region is an id int: the region is our allocation, and the
        // only pointers into it that ever leave this module are those of made objects
        // (`id_int`). Its value, set when its chunk was made and never changed, is its index.
        (offset < ID_INT_LIMIT * size && offset % size == 0).then_some((offset / size) as Rank)
    }

    /// The id int of `v` if its chunk is made; never makes one.
    #[inline(always)]
    fn made_int(&self, v: usize) -> Option<*mut ffi::PyObject> {
        let made = self.made.get(v / CHUNK)?.load(Ordering::Acquire);
        // SAFETY: `v < ID_INT_LIMIT` (`made` exists for its chunk), so the pointer is inside
        // the region's allocation; the chunk's objects were written before `made` was set
        // (Release, seen here with Acquire).
        made.then(|| unsafe { self.base.add(v) }.cast())
    }

    /// Makes the chunk of id `top` and every chunk before it, unless made; `false` (nothing
    /// made) if `top` is not below [`FILL_LIMIT`]. Once it returns `true`, every id up to
    /// `top` has its object.
    #[inline(always)]
    fn make_through(&self, spec: IdIntSpec, top: Rank) -> bool {
        let top = top as usize;
        if top / CHUNK < self.made_below.load(Ordering::Acquire) {
            return true;
        }
        if top >= FILL_LIMIT {
            return false;
        }
        self.make_below(spec, top / CHUNK + 1);
        true
    }

    /// Makes chunks `0..end` (those not made yet), then records that they are.
    #[cold]
    #[inline(never)]
    fn make_below(&self, spec: IdIntSpec, end: usize) {
        for (index, made) in self.made[..end].iter().enumerate() {
            if !made.load(Ordering::Acquire) {
                make_chunk(spec, self, index);
            }
        }
        // Each chunk was seen made (Acquire) after its objects were written, so a thread
        // that sees this (Acquire) sees them too.
        self.made_below.fetch_max(end, Ordering::Release);
    }
}

/// What an id int looks like on this interpreter.
#[derive(Clone, Copy)]
struct IdIntSpec {
    layout: IntLayout,
    refcnt: isize,
}

/// `PyOnceLock` for the reason given at [`INT_LAYOUT`], whose look-up this one makes.
static ID_INT_SPEC: PyOnceLock<Option<IdIntSpec>> = PyOnceLock::new();

/// `None` where ids get C-API ints: other interpreters and layouts, 32-bit targets, and
/// builds whose object header is not the plain 16-byte (reference count, type) pair —
/// free-threaded builds and `Py_TRACE_REFS` builds.
fn id_int_spec(py: Python<'_>) -> Option<IdIntSpec> {
    *ID_INT_SPEC.get_or_init(py, || {
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
fn id_int(spec: IdIntSpec, region: &Region, id: Rank) -> Option<*mut ffi::PyObject> {
    let id = id as usize;
    region.made_int(id).or_else(|| {
        region.made.get(id / CHUNK)?; // past ID_INT_LIMIT: no chunk to make
        make_chunk(spec, region, id / CHUNK);
        region.made_int(id)
    })
}

/// Writes chunk `index`'s objects, unless another thread has.
#[cold]
#[inline(never)]
fn make_chunk(spec: IdIntSpec, region: &Region, index: usize) {
    // A poisoned lock only means a panic elsewhere while holding it; `made` tells the truth.
    let _making = region
        .making
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if region.made[index].load(Ordering::Acquire) {
        return;
    }
    // Only the address of libpython's static type object is taken (safe since Rust 1.82).
    let ob_type = std::ptr::addr_of_mut!(ffi::PyLong_Type);
    for i in 0..CHUNK {
        let value = (index * CHUNK + i) as u32; // < 2^21: one 30-bit digit
        let size_word = match (spec.layout, value) {
            (IntLayout::ObSize, 0) => 0,
            (IntLayout::ObSize, _) => 1,
            (_, 0) => 1,      // lv_tag: no digits, sign "zero"
            (_, _) => 1 << 3, // lv_tag: one digit, sign "positive"
        };
        // SAFETY: `index * CHUNK + i < ID_INT_LIMIT`, inside the region; no pointer to this
        // chunk has been handed out (`made` is unset and we hold `making`), so nothing reads
        // or writes these objects while they are written.
        unsafe {
            region.base.add(index * CHUNK + i).write(IdInt {
                ob_refcnt: spec.refcnt,
                ob_type,
                size_word,
                digit: value,
            });
        }
    }
    region.made[index].store(true, Ordering::Release);
}
