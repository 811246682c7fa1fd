//! Counting the distinct pieces of a corpus, in parallel and in bounded memory.
//!
//! Invariant: the counts are exactly those of splitting every document whole (special
//! tokens first, then the pattern), whatever the number of threads and however a text is
//! cut into chunks or a file into blocks.
//!
//! How chunk edges stay exact. A run of the splitter that starts at a *restart point* (the
//! start of the text, or the end of a piece or of a special token in the whole-text run)
//! produces the whole-text run's pieces from there on, as long as the regex only needs
//! text near each piece to decide it: a piece whose end is at least `margin` bytes before
//! the end of the buffer the run sees is exact (for the OpenAI patterns the engine never
//! looks more than two characters past a match; `margin` is 4 KiB plus the longest special
//! token). So a long text is cut into ~1 MiB chunks, each run in parallel from its cut,
//! and each run goes on `ZONE` bytes into the next chunk. Two neighbouring runs are joined
//! at the first position in that zone where both have a boundary: from a common restart
//! point both produce the same pieces, so the left run's pieces up to it and the right
//! run's pieces after it are the whole-text pieces. When the zone holds no common
//! boundary (one piece longer than the zone), the right chunk is run again from the left
//! run's last exact boundary. This needs no knowledge of the pattern; cuts are put just
//! after a newline, where the runs almost always agree at once. Files are read in windows
//! that end at the last exact boundary, and the rest is carried into the next window.
//! (Speculative chunking with a synchronisation check is the classic way to parallelise
//! lexing; see e.g. Barenghi et al., "Parallel parsing made practical", 2015.)

use super::{Hook, Progress};
use crate::encode::pretok::Splitter;
use crate::encode::special::SpecialMatcher;
use crate::error::{Error, Result};
use crate::runtime::pool::OwnPool;
use rayon::prelude::*;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use super::table::{CountMap, LocalMap, Piece};

/// Texts longer than this are cut into chunks counted in parallel.
const CHUNK: usize = 1 << 20;
/// How far a chunk's run goes into the next chunk to find a common boundary.
const ZONE: usize = 4096;
/// Lookahead the regex may use past a piece (see the module comment).
const BASE_MARGIN: usize = 4096;
/// How much of a file is read and counted at a time.
const WINDOW: usize = 16 << 20;
/// Files smaller than this are read whole and counted in batches, one document each.
const SMALL_FILE: usize = 4 << 20;

/// The piece counts of a corpus, with the pattern and special tokens they were cut with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PieceCounts {
    pub pattern: String,
    pub specials: Vec<String>,
    pub counts: CountMap,
}

const MAGIC: &[u8; 8] = b"FTPIECE1";

/// The most pieces a table counts in all: no count, and no sum of two tables' counts of a
/// piece, can then overflow (a corpus of 2^63 pieces is some 30 exabytes).
const MAX_TOTAL: u64 = (1 << 63) - 1;

impl PieceCounts {
    pub fn new(pattern: String, specials: Vec<String>) -> Self {
        PieceCounts {
            pattern,
            specials,
            counts: CountMap::default(),
        }
    }

    /// Adds `other`'s counts; both must come from the same pattern and special tokens.
    pub fn add(&mut self, other: &PieceCounts) -> Result<()> {
        if self.pattern != other.pattern {
            return Err(Error::Input(
                "cannot add piece counts made with different patterns".into(),
            ));
        }
        if self.specials != other.specials {
            return Err(Error::Input(
                "cannot add piece counts made with different special tokens".into(),
            ));
        }
        if self
            .total()
            .checked_add(other.total())
            .is_none_or(|t| t > MAX_TOTAL)
        {
            return Err(Error::Input(
                "cannot add piece counts: together they count more than 2^63 - 1 pieces".into(),
            ));
        }
        self.counts.absorb(&other.counts);
        Ok(())
    }

    /// Total number of pieces (with multiplicity).
    pub fn total(&self) -> u64 {
        self.counts.total()
    }

    /// A canonical binary form: magic, pattern, special tokens, then the pieces sorted by
    /// bytes, each as `len, bytes, count` (LEB128 varints). Equal counts give equal bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut items: Vec<(Piece<'_>, u64)> = self.counts.iter().collect();
        items.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let body: usize = items.iter().map(|(k, _)| k.as_bytes().len() + 12).sum();
        let mut out = Vec::with_capacity(64 + self.pattern.len() + body);
        out.extend_from_slice(MAGIC);
        put_str(&mut out, &self.pattern);
        put_varint(&mut out, self.specials.len() as u64);
        for s in &self.specials {
            put_str(&mut out, s);
        }
        put_varint(&mut out, items.len() as u64);
        for (k, v) in items {
            put_str(&mut out, k.as_str());
            put_varint(&mut out, v);
        }
        out
    }

    pub fn from_bytes(data: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::Input(format!("not a ferrotok piece-count file: {what}"));
        if data.len() < MAGIC.len() || &data[..MAGIC.len()] != MAGIC {
            return Err(bad("wrong magic bytes"));
        }
        let mut r = Reader {
            data,
            pos: MAGIC.len(),
        };
        let pattern = r.string().ok_or_else(|| bad("truncated pattern"))?;
        let n_special = r.varint().ok_or_else(|| bad("truncated header"))?;
        let mut specials: Vec<String> = Vec::new();
        // A set for the repeat check: `specials.contains` made reading 160k tokens quadratic.
        let mut seen: rustc_hash::FxHashSet<&[u8]> = rustc_hash::FxHashSet::default();
        for _ in 0..n_special {
            let s = r.string().ok_or_else(|| bad("truncated special token"))?;
            if s.is_empty() || !seen.insert(&data[r.pos - s.len()..r.pos]) {
                return Err(bad("an empty or repeated special token"));
            }
            specials.push(s);
        }
        // Counting splits special tokens out before the pattern runs, so no piece it makes
        // holds one's text; a table with such a piece would train merges across it.
        let specials_in = (!specials.is_empty())
            .then(|| crate::encode::special::searcher(&specials, aho_corasick::MatchKind::Standard))
            .map(|ac| ac.ok_or_else(|| Error::Input("cannot search for the special tokens".into())))
            .transpose()?;
        let n = r.varint().ok_or_else(|| bad("truncated header"))?;
        let mut counts = CountMap::default();
        let mut total = 0u64;
        for _ in 0..n {
            let k = r.string().ok_or_else(|| bad("truncated piece"))?;
            let v = r.varint().ok_or_else(|| bad("truncated count"))?;
            // What `to_bytes` writes: distinct non-empty pieces, each counted at least once,
            // and a total that sums without overflow (see `MAX_TOTAL`).
            if k.is_empty() || v == 0 || counts.get(&k).is_some() {
                return Err(bad("an empty, uncounted or repeated piece"));
            }
            if let Some(m) = specials_in.as_ref().and_then(|ac| ac.find(&k)) {
                let token = &specials[m.pattern().as_usize()];
                return Err(bad(&format!(
                    "the piece {k:?} holds the special token {token:?}, which counting splits out"
                )));
            }
            total = total
                .checked_add(v)
                .filter(|&t| t <= MAX_TOTAL)
                .ok_or_else(|| bad("the counts add up to more than 2^63 - 1"))?;
            counts.add(&k, v);
        }
        if r.pos != data.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(PieceCounts {
            pattern,
            specials,
            counts,
        })
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.data.get(self.pos)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }
    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(n)?;
        let s = std::str::from_utf8(self.data.get(self.pos..end)?).ok()?;
        self.pos = end;
        Some(s.to_owned())
    }
}

/// What one chunk's run saw near its edges (offsets are into the whole text).
struct Edges<'t> {
    /// Pieces ending at or before `start + ZONE` (only for a speculative run).
    head: Vec<(usize, &'t str)>,
    /// Restart points in `[start, start + ZONE]`, `start` included.
    head_ends: Vec<usize>,
    /// Pieces ending after the next chunk's cut, up to the exact limit.
    tail: Vec<(usize, &'t str)>,
    /// Restart points in `[cut, limit]`.
    tail_ends: Vec<usize>,
    /// The last restart point at or before the exact limit (`start` if none).
    last_end: usize,
}

/// Where a chunk's run starts, where the next chunk starts, and how far it may look.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    /// `true` when `start` is not known to be a restart point yet.
    speculative: bool,
    /// Start of the next chunk, if any.
    cut: Option<usize>,
    /// End of the text this run sees.
    buf_end: usize,
    /// Pieces ending at or before this are exact.
    limit: usize,
}

/// Splits text into counted pieces: the special-token matcher and the pattern.
pub struct Counter {
    splitter: Splitter,
    specials: SpecialMatcher,
    pattern: String,
    special_list: Vec<String>,
    margin: usize,
    /// Target chunk size (a field so tests can exercise chunking on small texts).
    chunk: usize,
    /// How much of a long text or file is counted at a time (a field for the same reason).
    window: usize,
    counts: CountMap,
    bytes: u64,
    /// `None`: the process's build pool ([`crate::runtime::pool::parallel`]).
    pool: Option<OwnPool>,
}

impl Counter {
    /// `num_threads`: 0 for the process's pool of one thread per core, else a pool of that
    /// many threads.
    pub fn new(pattern: &str, specials: Vec<String>, num_threads: usize) -> Result<Self> {
        let splitter = Splitter::new(pattern)?;
        let mut seen = rustc_hash::FxHashSet::default();
        for s in &specials {
            if s.is_empty() {
                return Err(Error::Input("a special token is empty".into()));
            }
            if !seen.insert(s.as_str()) {
                return Err(Error::Input(format!("special token {s:?} is given twice")));
            }
        }
        let max_special = specials.iter().map(String::len).max().unwrap_or(0);
        let pool = if num_threads == 0 {
            None
        } else {
            Some(OwnPool::new(num_threads).map_err(|e| threads_error(num_threads, &e))?)
        };
        Ok(Counter {
            splitter,
            specials: SpecialMatcher::new(specials.clone()),
            pattern: pattern.to_owned(),
            special_list: specials,
            margin: BASE_MARGIN + 2 * max_special,
            chunk: CHUNK,
            window: WINDOW,
            counts: CountMap::default(),
            bytes: 0,
            pool,
        })
    }

    /// Bytes of text counted so far.
    pub fn bytes_counted(&self) -> u64 {
        self.bytes
    }

    /// The counts so far (the counter can go on counting).
    pub fn snapshot(&self) -> PieceCounts {
        PieceCounts {
            pattern: self.pattern.clone(),
            specials: self.special_list.clone(),
            counts: self.counts.clone(),
        }
    }

    pub fn finish(self) -> PieceCounts {
        PieceCounts {
            pattern: self.pattern,
            specials: self.special_list,
            counts: self.counts,
        }
    }

    fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(p) => p.install(f),
            None => crate::runtime::pool::parallel(f),
        }
    }

    /// A counter made before a fork and used in the child: its own pool's threads are the
    /// parent's, so the child needs a pool of its own first (see `pool.rs`).
    fn pool_in_this_process(&mut self) -> Result<()> {
        match &mut self.pool {
            Some(p) => p
                .in_this_process()
                .map_err(|e| threads_error(p.threads(), &e)),
            None => Ok(()),
        }
    }

    /// Counts the pieces of one window of text on the pool (see [`Self::count_prefix`]) and
    /// adds them to the totals; returns how many bytes of `text` that covered.
    fn count_window(&mut self, text: &str, last: bool) -> Result<usize> {
        let (consumed, local) = self.install(|| {
            let mut local = LocalMap::default();
            self.count_prefix(text, last, &mut local)
                .map(|c| (c, local))
        })?;
        self.absorb(local);
        Ok(consumed)
    }

    /// Counts each text as one document.
    /// Texts longer than a window are counted window by window, with `hook` called after
    /// each (so a single huge string shows progress and can be interrupted).
    pub fn add_texts<S: AsRef<str> + Sync>(&mut self, texts: &[S], hook: Hook<'_>) -> Result<()> {
        self.pool_in_this_process()?;
        let (big, docs): (Vec<&str>, Vec<&str>) = texts
            .iter()
            .map(AsRef::as_ref)
            .partition(|d| d.len() > self.window);
        let local = self.install(|| self.count_docs(&docs))?;
        self.absorb(local);
        self.bytes += docs.iter().map(|d| d.len() as u64).sum::<u64>();
        for doc in big {
            self.count_big_text(doc, hook)?;
        }
        Ok(())
    }

    fn count_big_text(&mut self, doc: &str, hook: Hook<'_>) -> Result<()> {
        let mut pos = 0; // always a restart point
        let mut want = self.window;
        while pos < doc.len() {
            let mut end = (pos + want).min(doc.len());
            while !doc.is_char_boundary(end) {
                end += 1;
            }
            let last = end == doc.len();
            let text = &doc[pos..end];
            let consumed = self.count_window(text, last)?;
            if consumed == 0 && !last {
                want = want.saturating_mul(2); // one piece longer than the window
                continue;
            }
            pos += consumed;
            self.bytes += consumed as u64;
            want = self.window;
            hook(Progress::Counting {
                done: self.bytes,
                total: None,
            })?;
        }
        Ok(())
    }

    /// Counts each file as one document (raw UTF-8, no newline translation), reading
    /// large files in windows. Every regular file is opened before any is counted, so a
    /// missing file fails at once. A stream (a named pipe, `/dev/stdin`, a shell's
    /// `<(...)`) is opened only when its turn comes and read once, in windows: opening it
    /// early would connect its writer to a reader that goes away, losing what it wrote.
    pub fn add_files(&mut self, paths: &[PathBuf], hook: Hook<'_>) -> Result<()> {
        self.pool_in_this_process()?;
        // A file's size, or `None` for a stream (its size is not known ahead).
        let mut sizes = Vec::with_capacity(paths.len());
        for p in paths {
            let meta = std::fs::metadata(p).map_err(|e| io_error(p, &e))?;
            if meta.is_dir() {
                return Err(Error::Io(format!(
                    "cannot read {}: is a directory",
                    p.display()
                )));
            }
            if meta.is_file() {
                std::fs::File::open(p).map_err(|e| io_error(p, &e))?;
                sizes.push(Some(meta.len()));
            } else {
                sizes.push(None);
            }
        }
        let total: u64 = sizes.iter().flatten().sum();
        let total = (!sizes.contains(&None)).then_some(total);
        let start_bytes = self.bytes;
        let mut batch: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut batch_bytes = 0usize;
        for (i, p) in paths.iter().enumerate() {
            match sizes[i] {
                Some(size) if size as usize <= SMALL_FILE => {
                    let data = std::fs::read(p).map_err(|e| io_error(p, &e))?;
                    batch_bytes += data.len();
                    batch.push((i, data));
                    if batch_bytes >= self.window {
                        self.count_file_batch(paths, &batch)?;
                        batch.clear();
                        batch_bytes = 0;
                        hook(Progress::Counting {
                            done: self.bytes - start_bytes,
                            total,
                        })?;
                    }
                }
                size => {
                    let before = self.bytes - start_bytes;
                    let file = open_file(p, size.is_none(), &mut || {
                        hook(Progress::Counting {
                            done: before + batch_bytes as u64,
                            total,
                        })
                    })?;
                    self.count_big_file(p, file, &mut |done| {
                        hook(Progress::Counting {
                            done: before + done + batch_bytes as u64,
                            total,
                        })
                    })?;
                }
            }
        }
        self.count_file_batch(paths, &batch)?;
        hook(Progress::Counting {
            done: self.bytes - start_bytes,
            total,
        })
    }

    fn count_file_batch(&mut self, paths: &[PathBuf], batch: &[(usize, Vec<u8>)]) -> Result<()> {
        let mut docs = Vec::with_capacity(batch.len());
        for (i, data) in batch {
            docs.push(std::str::from_utf8(data).map_err(|e| utf8_error(&paths[*i], 0, &e))?);
        }
        let local = self.install(|| self.count_docs(&docs))?;
        self.absorb(local);
        self.bytes += docs.iter().map(|d| d.len() as u64).sum::<u64>();
        Ok(())
    }

    /// Counts `f`, the file at `path`, read in windows; `progress(bytes counted)` is
    /// called after each window and while a stream has nothing to read yet.
    fn count_big_file(
        &mut self,
        path: &Path,
        mut f: InputFile,
        progress: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let mut buf: Vec<u8> = Vec::new();
        let mut file_off = 0u64; // file offset of buf[0], always a restart point
        let mut want = self.window;
        let mut eof = false;
        let start_bytes = self.bytes;
        loop {
            while buf.len() < want && !eof {
                let old = buf.len();
                buf.resize(want, 0);
                let counted = self.bytes - start_bytes;
                let n = f.read(&mut buf[old..], &mut || progress(counted));
                let n = n.map_err(|e| e.at(path))?;
                buf.truncate(old + n);
                eof = n == 0;
            }
            let text = match std::str::from_utf8(&buf) {
                Ok(s) => s,
                // A character cut by the window's end: count up to it, read the rest next.
                Err(e) if e.error_len().is_none() && !eof => {
                    // Cannot fail: `valid_up_to` is the end of the valid prefix.
                    std::str::from_utf8(&buf[..e.valid_up_to()])
                        .map_err(|e| utf8_error(path, file_off, &e))?
                }
                Err(e) => return Err(utf8_error(path, file_off, &e)),
            };
            let last = eof && text.len() == buf.len();
            let consumed = self.count_window(text, last)?;
            if last {
                self.bytes += buf.len() as u64;
                return progress(self.bytes - start_bytes);
            }
            if consumed == 0 {
                // One piece longer than the window: look further.
                want = want.saturating_mul(2);
                continue;
            }
            buf.drain(..consumed);
            file_off += consumed as u64;
            self.bytes += consumed as u64;
            want = self.window.max(buf.len() + self.window / 2);
            progress(self.bytes - start_bytes)?;
        }
    }

    fn absorb(&mut self, local: LocalMap<'_>) {
        self.counts.absorb(&local);
    }

    /// Counts whole documents: small ones in parallel with each other, big ones chunked.
    fn count_docs<'t>(&self, docs: &[&'t str]) -> Result<LocalMap<'t>> {
        let mut map = docs
            .par_iter()
            .filter(|d| d.len() <= 2 * self.chunk)
            .try_fold(LocalMap::default, |mut m, d| {
                self.scan(d, 0, d.len(), &mut |_, _, p| {
                    if let Some(p) = p {
                        m.add(p, 1);
                    }
                    Ok(())
                })?;
                Ok(m)
            })
            .try_reduce(LocalMap::default, |a, b| Ok(a.merged(b)))?;
        for d in docs.iter().filter(|d| d.len() > 2 * self.chunk) {
            self.count_prefix(d, true, &mut map)?;
        }
        Ok(map)
    }

    /// Calls `f(start, end, Some(piece))` for each piece of `text[from..to]` and
    /// `f(end, end, None)` after each special token; offsets are into `text`.
    fn scan<'t>(
        &self,
        text: &'t str,
        from: usize,
        to: usize,
        f: &mut dyn FnMut(usize, usize, Option<&'t str>) -> Result<()>,
    ) -> Result<()> {
        let base = text.as_ptr() as usize;
        let hay = &text[..to];
        let mut pos = from;
        loop {
            let next = self.specials.find_allowed(hay, pos, &|_| true);
            let seg_end = next.map_or(to, |(s, _, _)| s);
            if pos < seg_end {
                self.splitter.for_each_piece(&hay[pos..seg_end], |p| {
                    // Pieces are slices of `text`, so this is their offset in it.
                    let s = p.as_ptr() as usize - base;
                    f(s, s + p.len(), Some(p))
                })?;
            }
            match next {
                Some((_, e, _)) => {
                    f(e, e, None)?;
                    pos = e;
                }
                None => return Ok(()),
            }
        }
    }

    /// Runs the splitter over one chunk, putting the pieces whose place in the whole-text
    /// run is already certain into `map` and keeping those near the edges apart.
    fn run_chunk<'t>(&self, text: &'t str, sp: Span, map: &mut LocalMap<'t>) -> Result<Edges<'t>> {
        let head_lim = if sp.speculative {
            sp.start + ZONE
        } else {
            sp.start
        };
        let mut e = Edges {
            head: Vec::new(),
            head_ends: vec![sp.start],
            tail: Vec::new(),
            tail_ends: Vec::new(),
            last_end: sp.start,
        };
        if sp.cut == Some(sp.start) {
            e.tail_ends.push(sp.start);
        }
        self.scan(text, sp.start, sp.buf_end, &mut |_, end, piece| {
            if end > sp.limit {
                return Ok(());
            }
            e.last_end = end;
            let in_head = sp.speculative && end <= head_lim;
            let past_cut = sp.cut.is_some_and(|c| end >= c);
            if in_head {
                e.head_ends.push(end);
            }
            if past_cut {
                e.tail_ends.push(end);
            }
            if let Some(p) = piece {
                if p.is_empty() {
                    return Ok(());
                }
                if in_head {
                    e.head.push((end, p));
                } else if sp.cut.is_some_and(|c| end > c) {
                    e.tail.push((end, p));
                } else {
                    map.add(p, 1);
                }
            }
            Ok(())
        })?;
        Ok(e)
    }

    /// Chunk starts for `text`: ~CHUNK apart, each just after a newline when one is near.
    fn cuts(&self, text: &str) -> Vec<usize> {
        let n = text.len();
        let chunk = self.chunk;
        let k = (n / chunk).max(1);
        let bytes = text.as_bytes();
        let mut cuts = vec![0];
        for j in 1..k {
            let nominal = j * n / k;
            let lo = nominal.saturating_sub(chunk / 4);
            let cut = match memrchr_newline(&bytes[lo..nominal]) {
                Some(i) => lo + i + 1,
                None => {
                    let mut c = nominal;
                    while !text.is_char_boundary(c) {
                        c += 1;
                    }
                    c
                }
            };
            if cut >= cuts[cuts.len() - 1] + chunk / 2 && cut + chunk / 2 <= n {
                cuts.push(cut);
            }
        }
        cuts
    }

    /// Counts the pieces of `text`, which starts at a restart point of a document, into
    /// `out`. With `last`, `text` runs to the document's end and all of it is counted;
    /// otherwise only the pieces known to be exact, and the returned offset (a restart
    /// point) is where counting must resume once more text is available.
    fn count_prefix<'t>(&self, text: &'t str, last: bool, out: &mut LocalMap<'t>) -> Result<usize> {
        let n = text.len();
        let m = self.margin;
        let limit_of = |buf_end: usize| {
            if buf_end < n {
                buf_end - m
            } else if last {
                n
            } else {
                n.saturating_sub(m)
            }
        };
        let cuts = self.cuts(text);
        let k = cuts.len();
        let span = |j: usize, start: usize, speculative: bool| {
            let cut = cuts.get(j + 1).copied();
            let mut buf_end = cut.map_or(n, |c| (c + ZONE + m).min(n));
            while !text.is_char_boundary(buf_end) {
                buf_end += 1;
            }
            Span {
                start,
                speculative,
                cut,
                buf_end,
                limit: limit_of(buf_end),
            }
        };
        // Every chunk but the first starts speculatively at its cut.
        let (map, mut edges) = (0..k)
            .into_par_iter()
            .try_fold(
                || (LocalMap::default(), Vec::new()),
                |(mut map, mut edges), j| {
                    let e = self.run_chunk(text, span(j, cuts[j], j > 0), &mut map)?;
                    edges.push((j, e));
                    Ok((map, edges))
                },
            )
            .try_reduce(
                || (LocalMap::default(), Vec::new()),
                |(a, mut ea), (b, eb)| {
                    ea.extend(eb);
                    Ok((a.merged(b), ea))
                },
            )?;
        let mut map = std::mem::take(out).merged(map);
        edges.sort_unstable_by_key(|(j, _)| *j);
        let mut edges: Vec<Option<Edges<'t>>> = edges.into_iter().map(|(_, e)| Some(e)).collect();
        let mut cur = edges[0].take().ok_or_else(internal)?;
        for j in 0..k - 1 {
            let next = edges[j + 1].take().ok_or_else(internal)?;
            if let Some(t) = first_common(&cur.tail_ends, &next.head_ends) {
                for &(end, p) in &cur.tail {
                    if end <= t {
                        map.add(p, 1);
                    }
                }
                for &(end, p) in &next.head {
                    if end > t {
                        map.add(p, 1);
                    }
                }
                cur = next;
            } else {
                // No common boundary: keep what the left run knows, take back the right
                // run's counts and run it again from the left run's last exact boundary.
                #[cfg(test)]
                FALLBACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                for &(_, p) in &cur.tail {
                    map.add(p, 1);
                }
                let mut wrong = LocalMap::default();
                self.run_chunk(text, span(j + 1, cuts[j + 1], true), &mut wrong)?;
                for (p, c) in wrong.iter() {
                    map.sub(p.as_str(), c);
                }
                cur = self.run_chunk(text, span(j + 1, cur.last_end, false), &mut map)?;
            }
        }
        *out = map;
        Ok(if last { n } else { cur.last_end })
    }
}

#[cfg(test)]
static FALLBACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn threads_error(n: usize, e: &rayon::ThreadPoolBuildError) -> Error {
    Error::Input(format!("cannot start {n} threads: {e}"))
}

fn internal() -> Error {
    Error::Input("internal error: chunk missing".into())
}

/// The first value present in both sorted lists.
fn first_common(a: &[usize], b: &[usize]) -> Option<usize> {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return Some(a[i]),
        }
    }
    None
}

fn memrchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().rposition(|&c| c == b'\n')
}

/// A file being counted: a regular file, or a stream read so that Ctrl-C is seen while
/// it waits for its writer.
struct InputFile {
    file: std::fs::File,
    stream: bool,
}

/// Opens `path`; `wait()` is called every 100 ms while a stream has no writer yet, and an
/// error from it (Ctrl-C) gives up.
fn open_file(path: &Path, stream: bool, wait: &mut dyn FnMut() -> Result<()>) -> Result<InputFile> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    if stream {
        // A plain open of a named pipe blocks until a writer comes, and the standard
        // library retries it when a signal interrupts it, so Ctrl-C would go unseen. Opened
        // non-blocking it returns at once; `InputFile::read` then polls for data.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| io_error(path, &e))?;
    let f = InputFile { file, stream };
    #[cfg(target_os = "linux")]
    if stream {
        // Linux reports a named pipe opened this way as readable only once a writer has
        // come (it holds back the hang-up of "no writer" until one has been seen), so this
        // waits as a blocking open would, but in steps.
        f.wait_readable(wait).map_err(|e| e.at(path))?;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = wait;
    Ok(f)
}

/// Why reading stopped: the file failed, or `wait()` returned an error (Ctrl-C).
enum ReadError {
    Io(std::io::Error),
    Stop(Error),
}

impl ReadError {
    fn at(self, path: &Path) -> Error {
        match self {
            ReadError::Io(e) => io_error(path, &e),
            ReadError::Stop(e) => e,
        }
    }
}

impl InputFile {
    /// Reads into `buf` like `Read::read` (0 at the end); a stream with nothing to read yet
    /// is waited on in steps that call `wait()`.
    fn read(
        &mut self,
        buf: &mut [u8],
        wait: &mut dyn FnMut() -> Result<()>,
    ) -> std::result::Result<usize, ReadError> {
        loop {
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if self.stream && e.kind() == std::io::ErrorKind::Interrupted => {
                    wait().map_err(ReadError::Stop)?;
                }
                Err(e) if self.stream && e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wait_readable(wait)?;
                }
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
    }

    /// Waits until the stream has data or its writer has gone, calling `wait()` every
    /// 100 ms.
    #[cfg(target_os = "linux")]
    fn wait_readable(
        &self,
        wait: &mut dyn FnMut() -> Result<()>,
    ) -> std::result::Result<(), ReadError> {
        use std::os::fd::AsRawFd;
        loop {
            let mut fd = libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `fd` is one initialised `pollfd` that outlives the call, and the count
            // passed is 1, so poll reads and writes only that struct; the descriptor is
            // owned by `self.file`, open for the whole call.
            let n = unsafe { libc::poll(&mut fd, 1, 100) };
            if n > 0 {
                return Ok(());
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(ReadError::Io(e));
                }
            }
            wait().map_err(ReadError::Stop)?;
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn wait_readable(
        &self,
        wait: &mut dyn FnMut() -> Result<()>,
    ) -> std::result::Result<(), ReadError> {
        // Elsewhere streams are opened blocking and never report "would block".
        wait().map_err(ReadError::Stop)
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> Error {
    Error::Io(format!("cannot read {}: {e}", path.display()))
}

fn utf8_error(path: &Path, base: u64, e: &std::str::Utf8Error) -> Error {
    Error::Input(format!(
        "{} is not UTF-8: invalid byte at offset {}",
        path.display(),
        base + e.valid_up_to() as u64
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    const CL100K: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

    /// A counter with small chunks, so tests cut texts of a few hundred KB.
    fn counter(specials: Vec<String>) -> Counter {
        let mut c = Counter::new(CL100K, specials, 0).unwrap();
        c.chunk = 16 * ZONE;
        c.window = 5 * c.chunk;
        c
    }

    fn whole(c: &Counter, text: &str) -> FxHashMap<String, u64> {
        let mut m = FxHashMap::default();
        c.scan(text, 0, text.len(), &mut |_, _, p| {
            if let Some(p) = p.filter(|p| !p.is_empty()) {
                *m.entry(p.to_string()).or_insert(0) += 1;
            }
            Ok(())
        })
        .unwrap();
        m
    }

    fn owned(m: LocalMap<'_>) -> FxHashMap<String, u64> {
        m.iter().map(|(k, v)| (k.as_str().to_string(), v)).collect()
    }

    fn sample(len: usize, seed: u64) -> String {
        let words = [
            "the",
            " quick",
            "  ",
            "\n",
            "\n\n",
            " 123456",
            "fox's",
            "  \t",
            "é",
            "日本語",
            " <|x|>",
            "<|",
            "|>",
            "...",
            "\r\n",
            "   x",
            "a",
            "\n  ",
            "'ll",
            " 🦀",
        ];
        let mut x = seed | 1;
        let mut s = String::new();
        while s.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push_str(words[(x % words.len() as u64) as usize]);
        }
        s
    }

    #[test]
    fn chunked_counting_equals_whole_text_counting() {
        for specials in [vec![], vec!["<|x|>".to_string()]] {
            let c = counter(specials);
            let text = sample(7 * c.chunk + 12345, 7);
            assert!(c.cuts(&text).len() >= 6);
            let mut out = LocalMap::default();
            assert_eq!(c.count_prefix(&text, true, &mut out).unwrap(), text.len());
            assert_eq!(owned(out), whole(&c, &text));
        }
    }

    #[test]
    fn a_piece_longer_than_the_zone_falls_back_exactly() {
        // Whitespace runs far longer than ZONE straddle the cuts.
        let c = counter(vec![]);
        let mut text = String::new();
        let mut i = 0;
        while text.len() < 10 * c.chunk {
            text.push_str(" word");
            text.push_str(&" ".repeat(3 * ZONE + i));
            i += 1;
        }
        let before = FALLBACKS.load(std::sync::atomic::Ordering::Relaxed);
        let mut out = LocalMap::default();
        c.count_prefix(&text, true, &mut out).unwrap();
        assert_eq!(owned(out), whole(&c, &text));
        assert!(FALLBACKS.load(std::sync::atomic::Ordering::Relaxed) > before);
    }

    #[test]
    fn prefix_counting_resumes_exactly() {
        let c = counter(vec!["<|x|>".into()]);
        let text = sample(8 * c.chunk, 11);
        let mut total: FxHashMap<String, u64> = FxHashMap::default();
        let mut pos = 0;
        let mut step = 3 * c.chunk + 1;
        while pos < text.len() {
            let mut end = (pos + step).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let last = end == text.len();
            let mut out = LocalMap::default();
            let used = c.count_prefix(&text[pos..end], last, &mut out).unwrap();
            for (k, v) in owned(out) {
                *total.entry(k).or_insert(0) += v;
            }
            if used == 0 {
                step *= 2;
            }
            pos += used;
        }
        assert_eq!(total, whole(&c, &text));
    }

    #[test]
    fn long_texts_and_files_are_counted_in_windows_exactly() {
        let c = counter(vec!["<|x|>".into()]);
        let text = sample(17 * c.chunk + 999, 3);
        let expected = whole(&c, &text);
        let owned_counts = |c: Counter| -> FxHashMap<String, u64> {
            let counts = c.finish().counts;
            counts
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v))
                .collect()
        };
        let mut by_text = counter(vec!["<|x|>".into()]);
        let mut windows = 0;
        by_text
            .add_texts(&[text.as_str()], &mut |_| {
                windows += 1;
                Ok(())
            })
            .unwrap();
        assert!(windows >= 3, "{windows} windows for {} bytes", text.len());
        assert_eq!(by_text.bytes_counted(), text.len() as u64);
        assert_eq!(owned_counts(by_text), expected);

        let dir = std::env::temp_dir().join(format!("ferrotok-count-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.txt");
        std::fs::write(&path, &text).unwrap();
        let mut by_file = counter(vec!["<|x|>".into()]);
        by_file
            .add_files(std::slice::from_ref(&path), &mut |_| Ok(()))
            .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(owned_counts(by_file), expected);
    }

    #[test]
    fn piece_counts_round_trip_and_add() {
        let mut a = PieceCounts::new("p".into(), vec!["<s>".into()]);
        a.counts.add("hello", 3);
        a.counts.add(" wörld and a long piece", 1 << 40);
        let b = PieceCounts::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(a, b);
        let mut c = a.clone();
        c.add(&b).unwrap();
        assert_eq!(c.counts.get("hello"), Some(6));
        assert!(PieceCounts::from_bytes(b"nonsense").is_err());
        let bytes = a.to_bytes();
        assert!(PieceCounts::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        let other = PieceCounts::new("q".into(), vec!["<s>".into()]);
        assert!(c.add(&other).is_err());
    }

    /// A table `to_bytes` could not have written is refused, not read into wrapped totals,
    /// empty pieces or two counts of one piece; and two tables whose sum would overflow do
    /// not add.
    #[test]
    fn tables_to_bytes_never_writes_are_refused() {
        let table = |specials: &[&str], items: &[(&str, u64)]| {
            let mut out = MAGIC.to_vec();
            put_str(&mut out, "p");
            put_varint(&mut out, specials.len() as u64);
            for s in specials {
                put_str(&mut out, s);
            }
            put_varint(&mut out, items.len() as u64);
            for (k, v) in items {
                put_str(&mut out, k);
                put_varint(&mut out, *v);
            }
            PieceCounts::from_bytes(&out)
        };
        let half = 1u64 << 62;
        assert!(table(&["<s>"], &[("ab", MAX_TOTAL - 1), ("cd", 1)]).is_ok());
        for (specials, items) in [
            (&[][..], &[("ab", MAX_TOTAL), ("cd", 1)][..]),
            (&[], &[("ab", u64::MAX), ("cd", 2)]),
            (&[], &[("ab", half), ("ab", half)]),
            (&[], &[("", 5), ("ab", 1)]),
            (&[], &[("ab", 0)]),
            (&[""], &[("ab", 1)]),
            (&["<s>", "<s>"], &[("ab", 1)]),
        ] {
            assert!(table(specials, items).is_err(), "{specials:?} {items:?}");
        }
        let mut big = table(&[], &[("ab", half)]).unwrap();
        let more = table(&[], &[("ab", half), ("cd", half - 1)]).unwrap();
        assert!(big.add(&more).is_err());
        assert_eq!(big.counts.get("ab"), Some(half)); // unchanged
        let fits = table(&[], &[("cd", half - 1)]).unwrap();
        big.add(&fits).unwrap();
        assert_eq!(big.total(), MAX_TOTAL);
    }

    #[test]
    fn bad_special_tokens_are_errors() {
        assert!(Counter::new(CL100K, vec!["".into()], 0).is_err());
        assert!(Counter::new(CL100K, vec!["<a>".into(), "<a>".into()], 0).is_err());
        assert!(matches!(
            Counter::new("(", vec![], 0),
            Err(Error::Pattern(_))
        ));
    }
}
