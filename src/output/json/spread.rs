//! The pieces [`super::Pretty`] writes a [`Spread`] with: the key of its
//! cache of recent spreads, the text around the numbers at each depth, and
//! a number as serde_json writes it.

use crate::stats::Spread;
use serde_json::ser::{CompactFormatter, Formatter as _};

/// A [`Spread`]'s value, bit for bit, and the depth it is written at: what
/// decides its text. (`None` is all ones, the bits of a NaN, which is
/// written `null` as `None` is.)
#[derive(Clone, Copy)]
pub(super) struct SpreadKey([u64; 6]);

/// Word by word: the derived comparison of an array of six words is a call
/// to `memcmp`, a tenth of the cost of writing a spread.
impl PartialEq for SpreadKey {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.0, &other.0);
        ((a[0] ^ b[0])
            | (a[1] ^ b[1])
            | (a[2] ^ b[2])
            | (a[3] ^ b[3])
            | (a[4] ^ b[4])
            | (a[5] ^ b[5]))
            == 0
    }
}

impl SpreadKey {
    pub(super) const SLOTS: usize = 64;

    pub(super) fn of(s: &Spread, depth: usize) -> SpreadKey {
        let bits = |v: Option<f64>| v.map_or(u64::MAX, f64::to_bits);
        SpreadKey([
            bits(s.max),
            bits(s.mean),
            bits(s.median),
            bits(s.min),
            s.n as u64,
            depth as u64,
        ])
    }

    pub(super) fn slot(&self) -> usize {
        let h = self
            .0
            .iter()
            .fold(0u64, |h, &x| (h ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        (h >> 58) as usize % Self::SLOTS
    }
}

/// What a [`Spread`] at one depth is written with, around its numbers:
/// `{`, each field's line up to its value, and the closing line.
pub(super) struct SpreadLines {
    pub(super) keys: [Vec<u8>; 5],
    pub(super) close: Vec<u8>,
}

impl SpreadLines {
    pub(super) fn at(depth: usize) -> SpreadLines {
        let inner = format!("\n{}", "  ".repeat(depth + 1));
        let key = |first: bool, name: &str| {
            format!("{}{inner}\"{name}\": ", if first { "{" } else { "," }).into_bytes()
        };
        SpreadLines {
            keys: [
                key(true, "max"),
                key(false, "mean"),
                key(false, "median"),
                key(false, "min"),
                key(false, "n"),
            ],
            close: format!("\n{}}}", "  ".repeat(depth)).into_bytes(),
        }
    }
}

/// A spread's number as serde_json writes it (`null` for none or a value
/// not finite) into `buf`; gives its length.
pub(super) fn number(buf: &mut [u8; 32], v: Option<f64>) -> usize {
    match v {
        Some(x) if x.is_finite() => {
            let mut rest = &mut buf[..];
            // An f64's shortest text is at most 24 bytes.
            let _ = CompactFormatter.write_f64(&mut rest, x);
            32 - rest.len()
        }
        _ => {
            buf[..4].copy_from_slice(b"null");
            4
        }
    }
}
