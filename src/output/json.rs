//! Pretty JSON exactly as `serde_json::to_string_pretty` writes it, byte for
//! byte, at a fraction of its cost for documents of many small objects
//! (`summary.json` of a 10,000-node model holds some 200,000 [`Spread`]s).
//!
//! serde_json's pretty printer writes each indentation level with its own
//! `write_all` and escapes every struct field name as if it could hold a
//! quote; this writer writes a line break and its indentation in one copy and
//! a field name (a Rust identifier, `&'static str`) as it is. Numbers and
//! strings are still written by serde_json's own formatter, so their text
//! cannot drift from what serde_json would write.
//!
//! [`sorted`] is the other half: a field written with its object keys sorted,
//! as a `serde_json::Value` (a `BTreeMap`) orders them, without building the
//! `Value`. Under this writer it sorts each object's entries as they are
//! written; under any other serializer it falls back to the `Value` round
//! trip, so the document is the same whoever writes it.
//!
//! [`Spread`]: crate::stats::Spread

use crate::stats::Spread;
use serde::ser::{self, Impossible, Serialize};
use serde_json::ser::{CompactFormatter, Formatter as _};
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt::Display;
use std::ops::Range;

mod spread;
use spread::{SpreadKey, SpreadLines, number};

/// `value` as `serde_json::to_string_pretty(value)` writes it.
pub fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    to_string_pretty_with_capacity(value, 4096)
}

/// [`to_string_pretty`] into a buffer of `capacity` bytes to begin with.
pub fn to_string_pretty_with_capacity<T: Serialize + ?Sized>(
    value: &T,
    capacity: usize,
) -> Result<String, serde_json::Error> {
    let mut w = Pretty::new(capacity, None);
    let _active = Active::enter();
    value.serialize(&mut w)?;
    // Every byte written is ASCII punctuation, or a `&str`'s bytes, or
    // serde_json's text of a number or an escaped string: UTF-8 throughout.
    // Checked in debug builds (the tests'); a 10,000-node summary is 30 MB.
    debug_assert!(std::str::from_utf8(&w.out).is_ok());
    // SAFETY: the bytes are UTF-8, as said above.
    Ok(unsafe { String::from_utf8_unchecked(w.out) })
}

/// The text of [`to_string_pretty`] written to `sink` as it is made, a
/// piece of [`FLUSH_AT`] bytes or so at a time: a document of 30 MB is not
/// held whole in memory (and its pages are not touched, which a short run
/// of many nodes pays for as much as for writing it). An error of `sink`
/// comes back as serde_json's I/O error (`std::io::Error::from` gives it back).
pub fn to_writer_pretty<T: Serialize + ?Sized>(
    value: &T,
    sink: &mut dyn std::io::Write,
) -> Result<(), serde_json::Error> {
    let mut w = Pretty::new(2 * FLUSH_AT, Some(sink));
    let _active = Active::enter();
    value.serialize(&mut w)?;
    w.flush()
}

/// How much text [`to_writer_pretty`] gathers before handing it on.
const FLUSH_AT: usize = 64 * 1024;

/// `#[serde(serialize_with = "json::sorted")]`: the field with every object
/// key sorted, as serialising it through `serde_json::Value` gives.
pub fn sorted<T: Serialize, S: ser::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    if ACTIVE.with(Cell::get) {
        s.serialize_newtype_struct(SORTED, v)
    } else {
        serde_json::to_value(v)
            .map_err(ser::Error::custom)?
            .serialize(s)
    }
}

/// A JSON string: as it is between quotes when nothing in it needs an
/// escape (names, durations, statuses), else escaped by serde_json.
fn write_str(out: &mut Vec<u8>, s: &str) -> Result<(), serde_json::Error> {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        ser::Serializer::serialize_str(&mut serde_json::Serializer::new(out), s)
    }
}

/// Does `s` hold a byte JSON escapes: a control character, `"` or `\`?
/// Eight bytes at a time: a word has a byte below 0x20 when
/// `(w - 0x20…20) & !w & 0x80…80` is not zero, and a byte `b` when
/// `w ^ b…b` has a zero byte (exact as tests of existence; bytes of 0x80
/// and above, UTF-8's, are never below 0x20 and never match).
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * n as u64) & !w & HIGH != 0;
    let has = |w: u64, b: u8| below(w ^ (ONES * b as u64), 1);
    let mut words = s.chunks_exact(8);
    for c in &mut words {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        if below(w, 0x20) || has(w, b'"') || has(w, b'\\') {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Writing into a `Vec` does not fail; should it, the error says so.
fn io(r: std::io::Result<()>) -> Result<(), serde_json::Error> {
    r.map_err(ser::Error::custom)
}

/// A [`Spread`] handed to this writer, which writes it at once.
/// (A `static`, so that every use hands over the same address: [`is`]
/// tells it by address before it compares text.)
static SPREAD: &str = "$hcsim::json::Spread";

thread_local! {
    /// The [`Spread`] being serialised, set by its `Serialize` just before
    /// it hands this writer the [`SPREAD`] newtype.
    static PENDING_SPREAD: Cell<Option<Spread>> = const { Cell::new(None) };
}

/// The five fields of a [`Spread`], for every serializer.
struct SpreadFields<'s>(&'s Spread);

impl Serialize for SpreadFields<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeStruct as _;
        let mut st = s.serialize_struct("Spread", 5)?;
        st.serialize_field("max", &self.0.max)?;
        st.serialize_field("mean", &self.0.mean)?;
        st.serialize_field("median", &self.0.median)?;
        st.serialize_field("min", &self.0.min)?;
        st.serialize_field("n", &self.0.n)?;
        st.end()
    }
}

impl Serialize for Spread {
    #[inline]
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if ACTIVE.with(Cell::get) {
            // To this writer: the spread itself. Any other serializer on this
            // thread meanwhile (a `to_value` inside a `Serialize`) sees a
            // newtype around the same fields.
            PENDING_SPREAD.with(|p| p.set(Some(*self)));
            s.serialize_newtype_struct(SPREAD, &SpreadFields(self))
        } else {
            SpreadFields(self).serialize(s)
        }
    }
}

/// Is newtype `name` this writer's `marker`? By address first (a marker
/// is a `static`), then by text (a newtype of someone else's of the same
/// length compares its bytes).
#[inline(always)]
fn is(name: &'static str, marker: &'static str) -> bool {
    std::ptr::eq(name, marker) || name == marker
}

/// The newtype name by which [`sorted`] asks this writer to sort.
static SORTED: &str = "$hcsim::json::sorted";

thread_local! {
    /// Set while this writer serialises on this thread: [`sorted`] then
    /// knows its serializer sorts by itself.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

/// Sets [`ACTIVE`] for its lifetime (and restores it, also on unwinding).
struct Active(bool);

impl Active {
    fn enter() -> Active {
        Active(ACTIVE.with(|a| a.replace(true)))
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.0));
    }
}

/// A line break followed by the indentation of up to 64 levels.
const NEWLINE_INDENT: &[u8; 1 + 128] = &{
    let mut b = [b' '; 129];
    b[0] = b'\n';
    b
};

struct Pretty<'s> {
    out: Vec<u8>,
    /// Where the text goes while it is written ([`to_writer_pretty`]): the
    /// buffer is handed on whenever it holds enough and no sorted object is
    /// open (whose entries point into it).
    sink: Option<&'s mut dyn std::io::Write>,
    /// The nesting level of the values being written.
    depth: usize,
    /// Objects are written with their keys sorted (inside [`sorted`]).
    sorted: bool,
    /// Inside [`sorted`], also where a part of it comes sorted already
    /// (`sorted` is then off): the buffer holds entries still to be
    /// ordered, and is not handed on.
    held: bool,
    /// The text of a `collect_str`, before it is escaped.
    scratch: String,
    /// By depth: the text around a [`Spread`]'s numbers.
    spread_lines: Vec<Option<Box<SpreadLines>>>,
    /// The text of recent spreads, by a hash of their value and depth.
    spread_cache: Vec<Option<(SpreadKey, Vec<u8>)>>,
    /// The buffers of sorted objects that have been written, for the next
    /// ones (a model of 1,000 nodes has thousands of small objects).
    pool: Vec<Sorted>,
    /// Field names known to need no escape, by address and length.
    plain_names: [(usize, usize); PLAIN_NAMES],
    /// By a field name's address and length and the depth: its line up to
    /// the value, comma first (see [`Pretty::field_line`]).
    field_lines: Vec<FieldLine>,
}

/// Slots of [`Pretty::field_lines`]: a document names a few hundred
/// (name, depth) pairs; a slot taken by another pair is remade, not grown.
const FIELD_LINES: usize = 512;

/// A field's line up to its value, comma first, for one name at one depth
/// (a longer one is not kept).
#[derive(Clone, Copy)]
struct FieldLine {
    /// The name's address and length, and the depth; all zero: empty.
    id: (usize, usize, usize),
    len: u8,
    /// Up to [`FieldLine::MAX`] bytes, and one spare: a copy of a fixed
    /// `MAX` bytes from the first or the second is always in bounds.
    text: [u8; FieldLine::MAX + 1],
}

impl FieldLine {
    const EMPTY: FieldLine = FieldLine {
        id: (0, 0, 0),
        len: 0,
        text: [0; FieldLine::MAX + 1],
    };
    /// The longest line kept.
    const MAX: usize = 55;
}

/// Slots of [`Pretty::plain_names`].
const PLAIN_NAMES: usize = 128;

impl<'s> Pretty<'s> {
    fn new(capacity: usize, sink: Option<&'s mut dyn std::io::Write>) -> Self {
        Pretty {
            out: Vec::with_capacity(capacity),
            sink,
            depth: 0,
            sorted: false,
            held: false,
            scratch: String::new(),
            spread_lines: Vec::new(),
            spread_cache: vec![None; SpreadKey::SLOTS],
            pool: Vec::new(),
            plain_names: [(0, 0); PLAIN_NAMES],
            field_lines: vec![FieldLine::EMPTY; FIELD_LINES],
        }
    }

    /// Hands the text written so far to the sink, if there is one.
    fn flush(&mut self) -> Result<(), serde_json::Error> {
        if let Some(sink) = &mut self.sink {
            sink.write_all(&self.out).map_err(serde_json::Error::io)?;
            self.out.clear();
        }
        Ok(())
    }

    /// `,` unless first, then a new line at the current depth.
    #[inline]
    fn line(&mut self, first: bool) {
        if !first {
            self.out.push(b',');
        }
        self.newline();
    }

    #[inline]
    fn newline(&mut self) {
        let n = 1 + 2 * self.depth;
        if n <= NEWLINE_INDENT.len() {
            self.out.extend_from_slice(&NEWLINE_INDENT[..n]);
        } else {
            self.out.push(b'\n');
            self.out.resize(self.out.len() + 2 * self.depth, b' ');
        }
    }

    fn string(&mut self, s: &str) -> Result<(), serde_json::Error> {
        write_str(&mut self.out, s)
    }

    /// Does field name `key` need no escape? Remembered by its address: a
    /// document writes the same few dozen names thousands of times.
    #[inline]
    fn plain_name(&mut self, key: &'static str) -> bool {
        let id = (key.as_ptr() as usize, key.len());
        let slot = &mut self.plain_names[(id.0 >> 3) % PLAIN_NAMES];
        if *slot == id {
            return true;
        }
        let plain = !needs_escape(key.as_bytes());
        if plain {
            *slot = id;
        }
        plain
    }

    /// A field name (a Rust identifier or a serde `rename`) and `": "`.
    #[inline]
    fn field_name(&mut self, key: &'static str) {
        if !self.plain_name(key) {
            // A `rename` may hold anything: serde_json escapes it.
            let _ = write_str(&mut self.out, key);
            return self.out.extend_from_slice(b": ");
        }
        self.out.reserve(key.len() + 4);
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\": ");
    }

    /// `,` unless first, a new line at the current depth and a field name:
    /// the text of a name at a depth is made once and then copied whole.
    #[inline]
    fn field_line(&mut self, first: bool, key: &'static str) {
        let id = (key.as_ptr() as usize, key.len(), self.depth);
        let h = (id.0 as u64 ^ (id.2 as u64) << 48).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = (h >> 55) as usize % FIELD_LINES;
        let line = &self.field_lines[slot];
        if line.id == id {
            // The text begins with the comma. A fixed-size copy (a few
            // vector moves, not a call to `memcpy`), of which the vector
            // keeps the line's length.
            let skip = usize::from(first);
            let len = usize::from(line.len) - skip;
            self.out.reserve(FieldLine::MAX);
            let at = self.out.len();
            // SAFETY: `reserve` leaves room for `MAX` bytes after `at`;
            // `text[skip..skip + MAX]` is inside `text` (`MAX + 1` bytes, `skip` at most 1);
            // the first `len <= MAX` of the bytes copied are the line, initialized.
            unsafe {
                let src = line.text.as_ptr().add(skip);
                std::ptr::copy_nonoverlapping(src, self.out.as_mut_ptr().add(at), FieldLine::MAX);
                self.out.set_len(at + len);
            }
        } else {
            self.new_field_line(first, key, id, slot);
        }
    }

    #[inline(never)]
    fn new_field_line(
        &mut self,
        first: bool,
        key: &'static str,
        id: (usize, usize, usize),
        slot: usize,
    ) {
        let start = self.out.len();
        self.line(false);
        self.field_name(key);
        let plain = self.plain_name(key);
        let text = &self.out[start..];
        if plain && text.len() <= FieldLine::MAX {
            let line = &mut self.field_lines[slot];
            line.id = id;
            line.len = text.len() as u8;
            line.text[..text.len()].copy_from_slice(text);
        }
        if first {
            self.out.remove(start);
        }
    }

    /// A [`Spread`], as serde would write its five fields.
    fn spread(&mut self, s: &Spread) {
        // Many spreads repeat (every node's zero failures, `null` delays):
        // the text of a recent one at this depth is copied whole.
        let key = SpreadKey::of(s, self.depth);
        let slot = key.slot();
        if let Some((k, text)) = &self.spread_cache[slot]
            && *k == key
        {
            self.out.extend_from_slice(text);
            return;
        }
        let start = self.out.len();
        if self.spread_lines.len() <= self.depth {
            self.spread_lines.resize_with(self.depth + 1, || None);
        }
        let depth = self.depth;
        let lines =
            self.spread_lines[depth].get_or_insert_with(|| Box::new(SpreadLines::at(depth)));
        // The text of each number, made once when they are all the same
        // (one replication: max = mean = median = min).
        let mut text = [0u8; 32];
        let mut same: Option<usize> = None;
        let values = [s.max, s.mean, s.median, s.min];
        if values
            .iter()
            .all(|v| v.map(f64::to_bits) == s.max.map(f64::to_bits))
        {
            same = Some(number(&mut text, s.max));
        }
        for (i, v) in values.into_iter().enumerate() {
            self.out.extend_from_slice(&lines.keys[i]);
            match same {
                Some(len) => self.out.extend_from_slice(&text[..len]),
                None => {
                    let len = number(&mut text, v);
                    self.out.extend_from_slice(&text[..len]);
                }
            }
        }
        self.out.extend_from_slice(&lines.keys[4]);
        let _ = CompactFormatter.write_u64(&mut self.out, s.n as u64);
        self.out.extend_from_slice(&lines.close);
        let entry = self.spread_cache[slot].get_or_insert_with(|| (key, Vec::new()));
        entry.0 = key;
        entry.1.clear();
        entry.1.extend_from_slice(&self.out[start..]);
    }

    fn open(&mut self, bracket: u8) -> Compound<'_, 's> {
        self.out.push(bracket);
        self.depth += 1;
        let sorted = (self.sorted && bracket == b'{').then(|| {
            let mut s = self.pool.pop().unwrap_or_default();
            s.direct = Some(self.out.len());
            s
        });
        Compound {
            sorted,
            w: self,
            first: true,
            close: if bracket == b'{' { b'}' } else { b']' },
        }
    }
}

/// An object or an array being written.
struct Compound<'a, 's> {
    w: &'a mut Pretty<'s>,
    first: bool,
    close: u8,
    /// An object written with its keys sorted: its entries so far.
    sorted: Option<Sorted>,
}

/// The entries of a sorted object. While they come in key order (a struct
/// whose fields are declared sorted, a `BTreeMap`) they are written where
/// they go at once; the first one out of order moves those into a buffer of their own,
/// and from then on all are written at the object's end, sorted.
#[derive(Default)]
struct Sorted {
    /// Written in place so far: where the object's first entry begins in
    /// the document. `None`: spilled, the entries are written into a buffer
    /// of their own, which stands in for the document (see `parked`).
    direct: Option<usize>,
    /// Once spilled, the document, set aside while the writer's buffer
    /// holds the entries' text (each entry: its key's JSON, `": "` and its
    /// value's JSON); it comes back when the object is finished. Before:
    /// an empty buffer kept for the next spill.
    parked: Vec<u8>,
    /// Each entry's key and where its text lies in the writer's buffer
    /// (the document in place, the entries' buffer once spilled).
    entries: Vec<(Key, Range<usize>)>,
    /// A key between `serialize_key` and `serialize_value`, and where its
    /// text begins.
    pending: Option<(Key, usize)>,
}

/// A sorted object's key, ordered as its text is, with its first eight
/// bytes as a number (zero-padded, big-endian) to compare first: keys that
/// differ there (most) are ordered without a call to `memcmp`. A padded
/// prefix is smaller only if the text is: zero is the least byte.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    prefix: u64,
    text: Cow<'static, str>,
}

/// `key`'s first eight bytes, zero-padded, as a big-endian number.
#[inline]
fn prefix(key: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

impl Key {
    fn of(text: Cow<'static, str>) -> Key {
        Key {
            prefix: prefix(&text),
            text,
        }
    }
}

impl Sorted {
    /// Can an entry of key `key` be written in place? Only after every
    /// earlier entry in place, with a greater key (an equal one: a
    /// `BTreeMap` keeps the later value, which the sort sees to).
    fn in_order(&self, key: &Key) -> bool {
        self.direct.is_some() && self.entries.last().is_none_or(|(k, _)| k < key)
    }

    /// Moves the entries written in place into a buffer of their own,
    /// which the writer then writes into until the object is finished; the
    /// document, left as it was when the object opened, is parked. Writing
    /// straight into the writer's buffer keeps each later entry (and any
    /// object nested in it) as cheap as one written in place.
    fn spill(&mut self, w: &mut Pretty<'_>, first: &mut bool) {
        let Some(base) = self.direct.take() else {
            return;
        };
        let mut entries = std::mem::take(&mut self.parked);
        entries.extend_from_slice(&w.out[base..]);
        for (_, r) in &mut self.entries {
            *r = r.start - base..r.end - base;
        }
        w.out.truncate(base);
        std::mem::swap(&mut w.out, &mut entries);
        self.parked = entries;
        *first = true;
    }
}

impl<'a, 's> Compound<'a, 's> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), serde_json::Error> {
        let first = std::mem::replace(&mut self.first, false);
        self.w.line(first);
        v.serialize(&mut *self.w)?;
        // Between the elements of an array (a summary's nodes, its runs),
        // outside any sorted object: nothing points into the buffer.
        if self.w.out.len() >= FLUSH_AT && self.w.sink.is_some() && !self.w.held {
            self.w.flush()?;
        }
        Ok(())
    }

    /// A struct field's line up to its value. The common case, an object
    /// not sorted, is inlined into each `Serialize`; sorting is out of line.
    #[inline(always)]
    fn field(&mut self, key: &'static str) -> Result<(), serde_json::Error> {
        if self.sorted.is_none() {
            let first = std::mem::replace(&mut self.first, false);
            self.w.field_line(first, key);
            return Ok(());
        }
        self.sorted_field(key)
    }

    #[inline(never)]
    fn sorted_field(&mut self, key: &'static str) -> Result<(), serde_json::Error> {
        let Some(s) = &mut self.sorted else {
            unreachable!("called for sorted objects only")
        };
        let k = Key::of(Cow::Borrowed(key));
        if s.in_order(&k) {
            let first = std::mem::replace(&mut self.first, false);
            // The entry begins after the comma, line break and indentation.
            let start = self.w.out.len() + usize::from(!first) + 1 + 2 * self.w.depth;
            self.w.field_line(first, key);
            s.pending = Some((k, start));
        } else {
            s.spill(self.w, &mut self.first);
            s.pending = Some((k, self.w.out.len()));
            self.w.field_name(key);
        }
        Ok(())
    }

    fn map_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), serde_json::Error> {
        match &mut self.sorted {
            Some(s) if s.direct.is_some() => {
                let (mark, first) = (self.w.out.len(), self.first);
                self.w.line(first);
                let start = self.w.out.len();
                let text = write_map_key(&mut self.w.out, key, true)?.unwrap_or_default();
                let k = Key::of(Cow::Owned(text));
                if s.in_order(&k) {
                    self.w.out.extend_from_slice(b": ");
                    self.first = false;
                    s.pending = Some((k, start));
                    return Ok(());
                }
                // Out of order: undone, and written with the spilled entries.
                self.w.out.truncate(mark);
                s.spill(self.w, &mut self.first);
                let start = self.w.out.len();
                write_map_key(&mut self.w.out, key, false)?;
                self.w.out.extend_from_slice(b": ");
                s.pending = Some((k, start));
            }
            Some(s) => {
                let start = self.w.out.len();
                let text = write_map_key(&mut self.w.out, key, true)?;
                self.w.out.extend_from_slice(b": ");
                s.pending = Some((Key::of(Cow::Owned(text.unwrap_or_default())), start));
            }
            None => {
                let first = std::mem::replace(&mut self.first, false);
                self.w.line(first);
                write_map_key(&mut self.w.out, key, false)?;
                self.w.out.extend_from_slice(b": ");
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), serde_json::Error> {
        if self.sorted.is_none() {
            return v.serialize(&mut *self.w);
        }
        self.sorted_value(v)
    }

    fn sorted_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), serde_json::Error> {
        let Some(s) = &mut self.sorted else {
            unreachable!("called for sorted objects only")
        };
        let (key, start) = s.pending.take().expect("a key before its value");
        // In place or spilled, the writer's buffer is where entries go.
        v.serialize(&mut *self.w)?;
        s.entries.push((key, start..self.w.out.len()));
        Ok(())
    }

    /// Closes the object or array; gives back the writer.
    fn finish(mut self) -> Result<&'a mut Pretty<'s>, serde_json::Error> {
        if let Some(mut s) = self.sorted.take() {
            if s.direct.take().is_some() {
                s.entries.clear();
                self.w.pool.push(s);
                return self.write_close();
            }
            // The document back; the entries' text into `parked`.
            std::mem::swap(&mut self.w.out, &mut s.parked);
            // A `BTreeMap` keeps the last value of a repeated key.
            s.entries.reverse();
            s.entries.sort_by(|a, b| a.0.cmp(&b.0));
            s.entries.dedup_by(|later, kept| later.0 == kept.0);
            for (_, text) in s.entries.drain(..) {
                let first = std::mem::replace(&mut self.first, false);
                self.w.line(first);
                self.w.out.extend_from_slice(&s.parked[text]);
            }
            s.parked.clear();
            self.w.pool.push(s);
        }
        self.write_close()
    }

    /// The closing line and bracket.
    fn write_close(self) -> Result<&'a mut Pretty<'s>, serde_json::Error> {
        self.w.depth -= 1;
        if !self.first {
            self.w.newline();
        }
        self.w.out.push(self.close);
        Ok(self.w)
    }
}

impl<'a, 's> ser::Serializer for &'a mut Pretty<'s> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Compound<'a, 's>;
    type SerializeTuple = Compound<'a, 's>;
    type SerializeTupleStruct = Compound<'a, 's>;
    type SerializeTupleVariant = Variant<'a, 's>;
    type SerializeMap = Compound<'a, 's>;
    type SerializeStruct = Compound<'a, 's>;
    type SerializeStructVariant = Variant<'a, 's>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        io(CompactFormatter.write_bool(&mut self.out, v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> {
        io(CompactFormatter.write_i8(&mut self.out, v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> {
        io(CompactFormatter.write_i16(&mut self.out, v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> {
        io(CompactFormatter.write_i32(&mut self.out, v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> {
        io(CompactFormatter.write_i64(&mut self.out, v))
    }
    fn serialize_i128(self, v: i128) -> Result<(), Self::Error> {
        io(CompactFormatter.write_i128(&mut self.out, v))
    }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> {
        io(CompactFormatter.write_u8(&mut self.out, v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> {
        io(CompactFormatter.write_u16(&mut self.out, v))
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> {
        io(CompactFormatter.write_u32(&mut self.out, v))
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> {
        io(CompactFormatter.write_u64(&mut self.out, v))
    }
    fn serialize_u128(self, v: u128) -> Result<(), Self::Error> {
        io(CompactFormatter.write_u128(&mut self.out, v))
    }
    // serde_json writes a NaN or an infinity as `null`.
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        if v.is_finite() {
            io(CompactFormatter.write_f32(&mut self.out, v))
        } else {
            self.serialize_unit()
        }
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        if v.is_finite() {
            io(CompactFormatter.write_f64(&mut self.out, v))
        } else {
            self.serialize_unit()
        }
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Self::Error> {
        let mut seq = self.open(b'[');
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        seq.finish().map(drop)
    }
    #[inline]
    fn serialize_none(self) -> Result<(), Self::Error> {
        self.serialize_unit()
    }
    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    #[inline]
    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Self::Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.string(variant)
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        if is(name, SPREAD) {
            if let Some(spread) = PENDING_SPREAD.with(Cell::take) {
                self.spread(&spread);
                return Ok(());
            }
        }
        if is(name, SORTED) {
            let was = std::mem::replace(&mut self.sorted, true);
            let held = std::mem::replace(&mut self.held, true);
            // Nodes then come with their keys sorted: written in place.
            let r = crate::spec::with_sorted_keys(|| v.serialize(&mut *self));
            (self.sorted, self.held) = (was, held);
            r
        } else if is(name, crate::spec::PRESORTED) {
            // Keys already in order, all the way down: written as they come.
            let was = std::mem::replace(&mut self.sorted, false);
            let r = v.serialize(&mut *self);
            self.sorted = was;
            r
        } else {
            v.serialize(self)
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        let mut map = self.open(b'{');
        map.field(variant)?;
        map.value(v)?;
        map.finish().map(drop)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a, 's>, Self::Error> {
        // Arrays keep their order; objects inside them are still sorted.
        Ok(self.open(b'['))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 's>, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'a, 's>, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant<'a, 's>, Self::Error> {
        Variant::open(self, variant, b'[')
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a, 's>, Self::Error> {
        Ok(self.open(b'{'))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a, 's>, Self::Error> {
        Ok(self.open(b'{'))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant<'a, 's>, Self::Error> {
        Variant::open(self, variant, b'{')
    }
    fn collect_str<T: Display + ?Sized>(self, v: &T) -> Result<(), Self::Error> {
        use std::fmt::Write as _;
        // Into a buffer kept for the purpose: a duration is written as
        // `"5ms"` thousands of times in a model of many nodes.
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        write!(text, "{v}").map_err(ser::Error::custom)?;
        let r = self.string(&text);
        self.scratch = text;
        r
    }
}

/// The compounds whose items are array elements.
macro_rules! elements {
    ($($tr:ident::$method:ident),*) => {
        $(impl ser::$tr for Compound<'_, '_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
                self.element(v)
            }
            fn end(self) -> Result<(), Self::Error> {
                self.finish().map(drop)
            }
        })*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.map_key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.value(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.finish().map(drop)
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        self.field(key)?;
        self.value(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.finish().map(drop)
    }
}

/// An enum's tuple or struct variant: `{"Variant": [..]}` or `{"Variant": {..}}`.
struct Variant<'a, 's> {
    inner: Compound<'a, 's>,
}

impl<'a, 's> Variant<'a, 's> {
    fn open(
        w: &'a mut Pretty<'s>,
        variant: &'static str,
        bracket: u8,
    ) -> Result<Self, serde_json::Error> {
        // The outer object holds one entry, written at once (sorting one
        // key changes nothing).
        w.out.push(b'{');
        w.depth += 1;
        w.newline();
        w.field_name(variant);
        Ok(Variant {
            inner: w.open(bracket),
        })
    }

    fn end(self) -> Result<(), serde_json::Error> {
        let w = self.inner.finish()?;
        w.depth -= 1;
        w.newline();
        w.out.push(b'}');
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Variant<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.inner.element(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        Variant::end(self)
    }
}

impl ser::SerializeStructVariant for Variant<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        self.inner.field(key)?;
        self.inner.value(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        Variant::end(self)
    }
}

/// Writes a map key as serde_json does: a string as it is, a number or a
/// boolean quoted; anything else is serde_json's own error. Gives the key's
/// text when `text` is asked for (to sort by).
fn write_map_key<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    key: &T,
    text: bool,
) -> Result<Option<String>, serde_json::Error> {
    if let Ok(t) = key.serialize(StrKey { out, text }) {
        return Ok(t);
    }
    // A single-entry object written by serde_json itself: `{<key>:null}`.
    struct One<'k, K: ?Sized>(&'k K);
    impl<K: Serialize + ?Sized> Serialize for One<'_, K> {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use ser::SerializeMap as _;
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry(self.0, &())?;
            m.end()
        }
    }
    let one = serde_json::to_vec(&One(key))?;
    let json = &one[1..one.len() - ":null}".len()];
    out.extend_from_slice(json);
    Ok(if text {
        Some(serde_json::from_slice(json)?)
    } else {
        None
    })
}

/// Writes a string key (the common case) without serde_json's detour;
/// refuses every other kind, writing nothing, for [`write_map_key`] to
/// hand to serde_json.
struct StrKey<'o> {
    out: &'o mut Vec<u8>,
    text: bool,
}

impl StrKey<'_> {
    fn key(self, s: &str) -> Result<Option<String>, serde_json::Error> {
        write_str(self.out, s)?;
        Ok(self.text.then(|| s.to_string()))
    }
}

fn not_str<T>() -> Result<T, serde_json::Error> {
    Err(ser::Error::custom("not a string key"))
}

/// Serializer methods that refuse their value (not a string key).
macro_rules! refuse {
    ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<$ok, Self::Error> {
            not_str()
        })*
    };
}

impl ser::Serializer for StrKey<'_> {
    type Ok = Option<String>;
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<Option<String>, serde_json::Error>;
    type SerializeTuple = Impossible<Option<String>, serde_json::Error>;
    type SerializeTupleStruct = Impossible<Option<String>, serde_json::Error>;
    type SerializeTupleVariant = Impossible<Option<String>, serde_json::Error>;
    type SerializeMap = Impossible<Option<String>, serde_json::Error>;
    type SerializeStruct = Impossible<Option<String>, serde_json::Error>;
    type SerializeStructVariant = Impossible<Option<String>, serde_json::Error>;

    fn serialize_str(self, v: &str) -> Result<Option<String>, Self::Error> {
        self.key(v)
    }
    fn serialize_char(self, v: char) -> Result<Option<String>, Self::Error> {
        self.key(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Option<String>, Self::Error> {
        self.key(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<Option<String>, Self::Error> {
        v.serialize(self)
    }
    refuse! {
        serialize_bool(bool) -> Option<String>;
        serialize_i8(i8) -> Option<String>;
        serialize_i16(i16) -> Option<String>;
        serialize_i32(i32) -> Option<String>;
        serialize_i64(i64) -> Option<String>;
        serialize_u8(u8) -> Option<String>;
        serialize_u16(u16) -> Option<String>;
        serialize_u32(u32) -> Option<String>;
        serialize_u64(u64) -> Option<String>;
        serialize_f32(f32) -> Option<String>;
        serialize_f64(f64) -> Option<String>;
        serialize_bytes(&[u8]) -> Option<String>;
        serialize_none() -> Option<String>;
        serialize_unit() -> Option<String>;
        serialize_unit_struct(&'static str) -> Option<String>;
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct(&'static str, usize) -> Self::SerializeStruct;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Option<String>, Self::Error> {
        not_str()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Option<String>, Self::Error> {
        not_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    /// The word-at-a-time test agrees with the byte-by-byte one for every
    /// byte at every position of strings of 0 to 24 bytes.
    #[test]
    fn needs_escape_is_the_byte_test() {
        let slow = |s: &[u8]| s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        for len in 0..=24 {
            for at in 0..len.max(1) {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    if len > 0 {
                        s[at] = b;
                    }
                    assert_eq!(needs_escape(&s), slow(&s), "{b:#x} at {at} of {len}");
                }
            }
        }
        assert!(!needs_escape("ééé héllo wörld ünïcode".as_bytes()));
    }

    #[derive(Serialize)]
    enum E {
        Unit,
        New(u8),
        Tuple(u8, &'static str),
        Struct { b: f64, a: Option<f64> },
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: u32,
        alpha: Vec<E>,
        #[serde(flatten)]
        extra: BTreeMap<String, Value>,
        empty: Vec<u8>,
        none: Option<String>,
        nan: f64,
    }

    #[derive(Serialize)]
    struct Doc {
        name: &'static str,
        #[serde(rename = "quoted\"name")]
        quoted: char,
        by_number: BTreeMap<u16, f32>,
        by_bool: BTreeMap<bool, ()>,
        inner: Inner,
        #[serde(serialize_with = "sorted")]
        sorted_inner: Inner,
        empty_map: BTreeMap<String, u8>,
        bytes: serde_bytes_like::Bytes,
        deep: Value,
        spread: Spread,
        spreads: BTreeMap<String, Vec<Spread>>,
        again: Vec<Spread>,
    }

    mod serde_bytes_like {
        pub(super) struct Bytes(pub(super) Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    fn inner() -> Inner {
        Inner {
            zeta: 3,
            alpha: vec![
                E::Unit,
                E::New(7),
                E::Tuple(1, "t\n\u{1}é"),
                E::Struct { b: 0.1, a: None },
            ],
            extra: [
                ("m".to_string(), json!({"y": [1, {}], "x": []})),
                ("b".into(), json!(-2)),
            ]
            .into_iter()
            .collect(),
            empty: vec![],
            none: None,
            nan: f64::NAN,
        }
    }

    fn doc() -> Doc {
        let mut deep = json!(1.5e300);
        for i in 0..80 {
            deep = json!({ format!("k{i}"): [deep] });
        }
        Doc {
            name: "a \"b\" \\ c",
            quoted: '"',
            by_number: [(10, 0.5), (2, f32::INFINITY)].into_iter().collect(),
            by_bool: [(true, ())].into_iter().collect(),
            inner: inner(),
            sorted_inner: inner(),
            empty_map: BTreeMap::new(),
            bytes: serde_bytes_like::Bytes(vec![0, 255]),
            deep,
            spread: Spread::of(&[1.0, 0.1, 2.5e-7]),
            spreads: [
                (
                    "none".to_string(),
                    vec![Spread::default(), Spread::of(&[3.0])],
                ),
                (
                    "big".to_string(),
                    vec![Spread::of(&[1e300, -0.0, 12345.678])],
                ),
            ]
            .into_iter()
            .collect(),
            // The same spreads at another depth, a NaN beside a `None`.
            again: vec![
                Spread::default(),
                Spread::default(),
                Spread::of(&[3.0]),
                Spread {
                    max: Some(f64::NAN),
                    ..Spread::default()
                },
                Spread::default(),
            ],
        }
    }

    #[test]
    fn writes_what_serde_json_writes_byte_for_byte() {
        let d = doc();
        let ours = to_string_pretty(&d).unwrap();
        let theirs = serde_json::to_string_pretty(&d).unwrap();
        assert_eq!(ours, theirs);
        // The sorted field really was sorted (by the writer, not the fallback).
        let at = ours.find("\"sorted_inner\"").unwrap();
        let rest = &ours[at..];
        assert!(rest.find("\"alpha\"").unwrap() < rest.find("\"zeta\"").unwrap());
        // And the unsorted one kept its order.
        let rest = &ours[ours.find("\"inner\"").unwrap()..at];
        assert!(rest.find("\"zeta\"").unwrap() < rest.find("\"alpha\"").unwrap());
    }

    /// Entries in the order given, repeated keys and all: a map as a
    /// serializer sees it.
    struct Entries(Vec<(String, Value)>);

    impl Serialize for Entries {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap as _;
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (k, v) in &self.0 {
                m.serialize_entry(k, v)?;
            }
            m.end()
        }
    }

    #[test]
    fn sorted_objects_in_order_then_out_of_order_match_the_value_round_trip() {
        #[derive(Serialize)]
        struct W(#[serde(serialize_with = "sorted")] Vec<Entries>);
        let e = |keys: &[&str]| {
            Entries(
                keys.iter()
                    .enumerate()
                    .map(|(i, k)| (k.to_string(), json!({"z": i, "a": [i, {"y": 1, "b": 2}]})))
                    .collect(),
            )
        };
        let w = W(vec![
            e(&[]),
            e(&["a", "b", "c"]),           // in order: written in place
            e(&["a", "b", "z", "c", "d"]), // out of order after three
            e(&["b", "a"]),                // at the second
            e(&["a", "b", "b", "c"]),      // a repeated key keeps the later value
            e(&["a", "c", "b", "c"]),
            e(&["k\"q", "k", "é", "e"]), // escaped and non-ASCII keys
        ]);
        let ours = to_string_pretty(&w).unwrap();
        let theirs = serde_json::to_string_pretty(&serde_json::to_value(&w).unwrap()).unwrap();
        assert_eq!(ours, theirs);
        // Nested inside an object that spilled, and inside one in place.
        #[derive(Serialize)]
        struct Outer {
            #[serde(serialize_with = "sorted")]
            o: BTreeMap<&'static str, W>,
        }
        let o = Outer {
            o: [("x", W(vec![e(&["b", "a"])])), ("y", W(vec![e(&["a"])]))]
                .into_iter()
                .collect(),
        };
        let theirs = serde_json::to_string_pretty(&serde_json::to_value(&o).unwrap()).unwrap();
        assert_eq!(to_string_pretty(&o).unwrap(), theirs);
    }

    /// A model's own keys and its nodes' come in order (`SortedModel`,
    /// nodes marked presorted, written without sorting): the text is still
    /// the `Value` round trip's, for nodes of every distribution and every
    /// optional field, a pod's and a uniform time's (which are sorted)
    /// among them, and the model's optional sections.
    #[test]
    fn a_model_whose_keys_come_sorted_is_written_as_the_value_round_trip() {
        #[derive(Serialize)]
        struct W<'a>(#[serde(serialize_with = "sorted")] crate::spec::SortedModel<'a>);
        let mut m: Value =
            serde_json::from_str(include_str!("../../models/bench-canonical.json")).unwrap();
        let full = |name: &str, dist: Value| {
            json!({
                "name": name, "weight": 2, "backup": true, "down": false, "max_conns": 3,
                "max_queue": 4, "workers": 5, "backlog": 6, "service_time": dist,
                "keepalive_timeout": "5s", "keepalive_requests": 100, "check_port": 8081,
                "check_addr": "10.0.0.9", "on_marked_down": "shutdown_sessions",
                "on_marked_up": "shutdown_backup_sessions"
            })
        };
        let mut pod = full("p", json!({"dist": "exponential", "mean": "5ms"}));
        pod["pod"] = json!({});
        m["nodes"] = json!([
            full("c", json!({"dist": "constant", "value": "1ms"})),
            full("e", json!({"dist": "exponential", "mean": "1500us"})),
            full("l", json!({"dist": "lognormal", "median": "2ms", "sigma": 0.5})),
            full("u", json!({"dist": "uniform", "min": "1ms", "max": "2ms"})),
            {"name": "plain", "workers": 1},
            pod,
        ]);
        m["$schema"] = json!("x.json");
        m["timeline_bucket"] = json!("1s");
        m["measure"] = json!({"from": "1s"});
        let spec: crate::spec::ModelSpec = serde_json::from_value(m).unwrap();
        let ours = to_string_pretty(&W(crate::spec::SortedModel::of(&spec))).unwrap();
        let theirs = serde_json::to_string_pretty(&serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_key_serde_json_refuses_is_refused() {
        let m: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into_iter().collect();
        assert!(serde_json::to_string_pretty(&m).is_err());
        assert!(to_string_pretty(&m).is_err());
    }

    #[test]
    fn sorted_outside_the_writer_is_the_value_round_trip() {
        #[derive(Serialize)]
        struct W(#[serde(serialize_with = "sorted")] Inner);
        let v = serde_json::to_value(W(inner())).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        let mut s = keys.clone();
        s.sort();
        assert_eq!(keys, s);
    }
}
