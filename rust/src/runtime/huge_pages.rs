//! Big allocations on 2 MiB pages: the allocator the Python extension runs on (Linux).
//!
//! Invariant: an allocation of at least [`HUGE_MIN`] bytes (alignment up to [`HUGE`]) is a
//! private anonymous mapping of its own that starts on a 2 MiB boundary, is
//! `round_up(size, HUGE)` bytes long and is advised `MADV_HUGEPAGE`; every other allocation is
//! the system allocator's. Which kind an allocation is follows from its layout alone, so
//! `dealloc` and `realloc`, which get the layout back, need no lookup.
//!
//! Why: encoding a text reads the vocabulary's tables at random — the short-token table
//! (8 MiB for o200k), the mid and token tables, the pair table, the backtracking tables, the
//! id ints (`py/ints.rs`). Each distinct token of a text is a probe on another 4 KiB page, so
//! the tables' pages outnumber the TLB many times over, and in a VM each miss is a walk of
//! two page tables, the guest's and the host's. On 2 MiB pages the same tables fit the TLB.
//! The cost shows most where the tables went cold. Headline: o200k English ~1.14x as fast
//! through Python (the figures, and the cold load's time and memory, are in docs/engine.md).
//!
//! Where Linux has no transparent huge pages (`enabled` is `never`), the advice does nothing
//! and the mappings are ordinary ones. `FERROTOK_HUGE_PAGES=0` leaves the advice out.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// The huge page size of x86-64 and of arm64 with 4 KiB pages.
pub const HUGE: usize = 2 << 20;

/// Allocations from this size up get a mapping of their own. Below it a table is not worth a
/// huge page of its own (an allocation of 1 MiB takes 2 MiB once touched); above it, the
/// system allocator would map the block itself anyway (glibc does from 128 KiB until its
/// threshold adapts), only not on a 2 MiB boundary, where no huge page can back it.
pub const HUGE_MIN: usize = 1 << 20;

/// The global allocator: mappings advised `MADV_HUGEPAGE` for big blocks, [`System`] for the
/// rest (see the module's invariant).
pub struct HugePages;

/// Does `layout` get a mapping of its own? The one rule every method below applies.
#[inline(always)]
fn is_huge(layout: &Layout) -> bool {
    layout.size() >= HUGE_MIN && layout.align() <= HUGE
}

/// `n` rounded up to a multiple of [`HUGE`]. No overflow: a `Layout`'s size is at most
/// `isize::MAX`, so `n + HUGE - 1` fits in a `usize`.
#[inline(always)]
fn round_up(n: usize) -> usize {
    (n + HUGE - 1) & !(HUGE - 1)
}

/// Whether to advise huge pages: read once from `FERROTOK_HUGE_PAGES` (0 = unread, 1 = yes,
/// 2 = no). `libc::getenv` allocates nothing, so the allocator may call it.
fn advise() -> bool {
    static ADVISE: AtomicU8 = AtomicU8::new(0);
    match ADVISE.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // SAFETY: the name is a NUL-terminated literal; the result is either null or a
            // NUL-terminated string owned by the environment, only read here at once. (A
            // `setenv` racing with this read is the caller's data race, as with any getenv.)
            let off = unsafe {
                let v = libc::getenv(c"FERROTOK_HUGE_PAGES".as_ptr());
                !v.is_null() && std::ffi::CStr::from_ptr(v).to_bytes() == b"0"
            };
            ADVISE.store(if off { 2 } else { 1 }, Ordering::Relaxed);
            !off
        }
    }
}

/// A new zero-filled mapping of `round_up(size)` bytes on a 2 MiB boundary, or null.
///
/// # Safety
/// `size` is the size of a `Layout` (at most `isize::MAX`).
unsafe fn map(size: usize) -> *mut u8 {
    let len = round_up(size);
    // One huge page more than needed, so that a 2 MiB boundary lies inside with `len` bytes
    // after it; the slack on either side is unmapped again at once.
    let Some(over) = len.checked_add(HUGE) else {
        return std::ptr::null_mut();
    };
    // SAFETY: an anonymous private mapping chosen by the kernel overlaps nothing of ours.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let start = raw as usize;
    let aligned = round_up(start);
    // `head < HUGE`, and a multiple of the page size (both `start` and `aligned` are).
    let head = aligned - start;
    // SAFETY: `[start, aligned)` and `[aligned + len, start + over)` (`HUGE - head > 0` bytes)
    // are the two ends of the mapping just made, page-aligned, and nobody has seen them. What
    // stays mapped is `[aligned, aligned + len)`.
    unsafe {
        if head > 0 {
            libc::munmap(raw, head);
        }
        libc::munmap((aligned + len) as *mut libc::c_void, HUGE - head);
        if advise() {
            // Only advice: on failure (no THP in this kernel) the pages stay 4 KiB ones.
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
    aligned as *mut u8
}

// SAFETY: each method keeps `GlobalAlloc`'s contract:
// - a block from `alloc` is `layout.size()` bytes at an address aligned to `layout.align()`:
//   a huge block is `round_up(size) >= size` bytes on a 2 MiB boundary, and `is_huge` admits
//   only alignments up to 2 MiB; anything else is `System`'s own block;
// - `dealloc` and `realloc` get the layout the block was allocated with (with `realloc`'s
//   new size for its result), so `is_huge` sends each block back to where it came from: a huge
//   block is unmapped with the length it was mapped with, `round_up(layout.size())`;
// - `alloc_zeroed` returns zeroed memory: a new anonymous mapping is zero-filled;
// - nothing here unwinds or allocates through the global allocator (`getenv` and the
//   syscalls do not).
unsafe impl GlobalAlloc for HugePages {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_huge(&layout) {
            // SAFETY: `layout.size()` is a layout's size.
            unsafe { map(layout.size()) }
        } else {
            // SAFETY: forwarded with the caller's guarantees (a non-zero size).
            unsafe { System.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_huge(&layout) {
            // SAFETY: the caller's guarantees, passed on; a new mapping is zero-filled.
            unsafe { self.alloc(layout) }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_huge(&layout) {
            // SAFETY: `ptr` came from `map(layout.size())` (the same rule chose it), which left
            // exactly `round_up(layout.size())` bytes mapped from `ptr`.
            unsafe { libc::munmap(ptr.cast(), round_up(layout.size())) };
        } else {
            // SAFETY: `ptr` is `System`'s block of this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to the alignment, fits in
        // `isize`, which is all `Layout` asks of a size for an alignment that is valid already.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (is_huge(&layout), is_huge(&new)) {
            // SAFETY: `System`'s block, to stay `System`'s.
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            // The mapping already spans the new size, and `dealloc` will unmap the same length.
            (true, true) if round_up(new_size) == round_up(layout.size()) => ptr,
            _ => {
                // SAFETY: `new` has a non-zero size (`realloc`'s caller guarantees it); both
                // blocks are live and distinct while the smaller size is copied; the old one
                // is then freed with its own layout, so by its own rule.
                unsafe {
                    let moved = self.alloc(new);
                    if !moved.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a pattern over the whole block and reads it back.
    fn fill_and_check(p: *mut u8, len: usize, seed: u8) {
        // SAFETY (test): `p` is a live block of at least `len` bytes.
        let block = unsafe { std::slice::from_raw_parts_mut(p, len) };
        for (i, b) in block.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(seed);
        }
        assert!(block
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i as u8).wrapping_mul(31).wrapping_add(seed)));
    }

    #[test]
    fn big_blocks_are_mappings_on_a_2mib_boundary() {
        for size in [HUGE_MIN, HUGE_MIN + 1, HUGE, 3 * HUGE + 17] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            // SAFETY (test): a non-zero layout; freed with the same layout.
            unsafe {
                let p = HugePages.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % HUGE, 0, "{size} bytes");
                assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
                fill_and_check(p, size, 7);
                HugePages.dealloc(p, layout);
            }
        }
    }

    /// The `VmFlags` of the mapping that holds `addr`, from `/proc/self/smaps`.
    fn vm_flags_of(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            match range.map(|(a, b)| (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))) {
                Some((Ok(a), Ok(b))) => inside = (a..b).contains(&addr),
                _ if inside && line.starts_with("VmFlags:") => return Some(line.to_string()),
                _ => {}
            }
        }
        None
    }

    /// Where the kernel has transparent huge pages, a big block's mapping carries the advice
    /// (`hg` in its flags), unless `FERROTOK_HUGE_PAGES=0`.
    #[test]
    fn big_blocks_are_advised_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            return; // a kernel without THP: `madvise` fails, and nothing else changes
        }
        let big = Layout::from_size_align(5 * HUGE_MIN, 8).unwrap();
        // SAFETY (test): a non-zero layout; freed with the same layout.
        unsafe {
            let p = HugePages.alloc(big);
            fill_and_check(p, big.size(), 9);
            let flags = vm_flags_of(p as usize).expect("the block is mapped");
            let off = std::env::var("FERROTOK_HUGE_PAGES").as_deref() == Ok("0");
            assert_eq!(flags.split_whitespace().any(|f| f == "hg"), !off, "{flags}");
            HugePages.dealloc(p, big);
        }
    }

    #[test]
    fn small_blocks_stay_the_system_allocator_s() {
        for (size, align) in [(1, 1), (4096, 64), (HUGE_MIN - 1, 16), (HUGE_MIN, 2 * HUGE)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY (test): a non-zero layout; freed with the same layout.
            unsafe {
                let p = HugePages.alloc(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0);
                fill_and_check(p, size, 3);
                HugePages.dealloc(p, layout);
            }
        }
    }

    /// Growing and shrinking across `HUGE_MIN` and across 2 MiB multiples keeps the bytes.
    #[test]
    fn realloc_keeps_the_contents_across_the_threshold() {
        let sizes = [
            4096,
            HUGE_MIN - 8,
            HUGE_MIN + 8,
            HUGE - 8,
            HUGE + 8,
            5 * HUGE,
            HUGE_MIN + 16,
            64,
        ];
        let mut layout = Layout::from_size_align(100, 8).unwrap();
        // SAFETY (test): every block is reallocated or freed with the layout it has.
        unsafe {
            let mut p = HugePages.alloc(layout);
            fill_and_check(p, 100, 1);
            for (k, &size) in sizes.iter().enumerate() {
                let keep = layout.size().min(size);
                let before: Vec<u8> = std::slice::from_raw_parts(p, keep).to_vec();
                p = HugePages.realloc(p, layout, size);
                assert!(!p.is_null());
                layout = Layout::from_size_align(size, 8).unwrap();
                assert_eq!(
                    std::slice::from_raw_parts(p, keep),
                    &before[..],
                    "to {size}"
                );
                fill_and_check(p, size, k as u8);
            }
            HugePages.dealloc(p, layout);
        }
    }

    /// A `Vec` on the global allocator (this one, in the crate's tests), as the tables are
    /// built: pushes past the threshold, then shrinks to fit, then is dropped.
    #[test]
    fn a_vec_grows_and_shrinks_through_it() {
        let n = 3 * HUGE / 8 + 5;
        let mut v: Vec<u64> = Vec::new();
        for i in 0..n as u64 {
            v.push(i);
        }
        assert_eq!(
            v.as_ptr() as usize % HUGE,
            0,
            "a {} byte buffer",
            v.capacity() * 8
        );
        v.truncate(HUGE_MIN / 8 / 2);
        v.shrink_to_fit();
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        let boxed: Box<[u64]> = (0..n as u64).collect();
        assert_eq!(boxed.as_ptr() as usize % HUGE, 0);
        assert_eq!(boxed.iter().sum::<u64>(), (n as u64 - 1) * n as u64 / 2);
    }
}
