//! `--shard K/N`: which runs of a sweep one machine runs.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// `--shard K/N`: the runs whose index modulo `N` is `K - 1`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

impl Shard {
    pub const WHOLE: Shard = Shard { k: 1, n: 1 };

    pub fn owns(self, run: usize) -> bool {
        run % self.n as usize == (self.k - 1) as usize
    }
    pub fn is_whole(self) -> bool {
        self.n == 1
    }
    /// The runs this shard owns among `total`, in index order.
    pub fn runs(self, total: usize) -> Vec<usize> {
        (0..total).filter(|&r| self.owns(r)).collect()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected K/N with 1 <= K <= N, e.g. 2/8, found \"{s}\"");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_runs() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!(s, Shard { k: 2, n: 3 });
        assert!(s.owns(1) && s.owns(4) && !s.owns(0) && !s.owns(2));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (1..=3).map(|k| Shard { k, n: 3 }).collect();
        for run in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.owns(run)).count(), 1);
        }
    }
}
