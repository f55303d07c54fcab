//! Is a difference between two runs beyond the replication noise? The
//! two-sided Mann–Whitney U test (Wilcoxon rank-sum test) over the
//! replications' values: it assumes nothing about their distribution, copes
//! with ties (discrete counts) through mid-ranks, and is exact for small
//! samples.
//!
//! With at most [`EXACT_MAX`] values in all, the p-value is exact: the share
//! of the C(n1 + n2, n1) ways to split the pooled (mid-)ranks whose rank sum
//! is at least as far from its mean as the observed one (a permutation test
//! of the rank sum). Above, the normal approximation with the tie correction
//! of the variance and a continuity correction of 0.5. Either way the result
//! is a pure function of the values, so reports are deterministic.

/// Pooled sample size up to which the p-value is exact.
pub const EXACT_MAX: usize = 40;

/// The outcome of [`mann_whitney`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankTest {
    /// Mann–Whitney U of the first sample (ties count one half).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// The smallest p-value samples of these sizes can give (no ties): below
    /// the significance level, or the test cannot detect anything.
    pub min_p: f64,
    /// Whether `p` is exact (else the normal approximation).
    pub exact: bool,
}

/// The two-sided Mann–Whitney U test of `a` against `b`; `None` if either
/// is empty. Non-finite values are left out.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let a: Vec<f64> = a.iter().copied().filter(|x| x.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|x| x.is_finite()).collect();
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let n = n1 + n2;
    // Pooled values, tagged by sample, sorted; doubled mid-ranks are integers.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank2 = vec![0u64; n];
    let mut ties: Vec<usize> = vec![];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        // ranks i+1 ..= j+1, doubled mid-rank = (i+1) + (j+1)
        for r in &mut rank2[i..=j] {
            *r = (i + j + 2) as u64;
        }
        ties.push(j - i + 1);
        i = j + 1;
    }
    let r1_2: u64 = pooled
        .iter()
        .zip(&rank2)
        .filter(|(p, _)| p.1)
        .map(|(_, r)| r)
        .sum();
    let u = r1_2 as f64 / 2.0 - (n1 * (n1 + 1)) as f64 / 2.0;
    let combos = binomial(n, n1);
    let min_p = (2.0 / combos).min(1.0);
    let mean2 = (n1 * (n + 1)) as i64; // mean of the doubled rank sum
    if n <= EXACT_MAX {
        let dev = (r1_2 as i64 - mean2).abs();
        let max_sum = rank2.iter().sum::<u64>() as usize;
        // ways[k][s]: subsets of k of the items seen so far with doubled rank sum s.
        let mut ways = vec![vec![0f64; max_sum + 1]; n1 + 1];
        ways[0][0] = 1.0;
        for &r in &rank2 {
            let r = r as usize;
            for k in (1..=n1).rev() {
                let (lo, hi) = ways.split_at_mut(k);
                let (prev, cur) = (&lo[k - 1], &mut hi[0]);
                for s in (r..=max_sum).rev() {
                    cur[s] += prev[s - r];
                }
            }
        }
        let extreme: f64 = ways[n1]
            .iter()
            .enumerate()
            .filter(|(s, _)| (*s as i64 - mean2).abs() >= dev)
            .map(|(_, w)| w)
            .sum();
        return Some(RankTest {
            u,
            p: (extreme / combos).min(1.0),
            min_p,
            exact: true,
        });
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let tie_sum: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_sum / (nf * (nf - 1.0)));
    let dev = (u - n1f * n2f / 2.0).abs();
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = (dev - 0.5).max(0.0) / var.sqrt();
        erfc(z / std::f64::consts::SQRT_2).min(1.0)
    };
    Some(RankTest {
        u,
        p,
        min_p,
        exact: false,
    })
}

/// C(n, k) as a float (exact up to 2^53).
fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k)
        .fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
        .round()
}

/// The complementary error function (Numerical Recipes' Chebyshev fit,
/// relative error below 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_values_match_the_tables() {
        // Completely separated samples of 4 and 4: p = 2 / C(8, 4) = 2/70.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!(t.exact);
        assert_eq!(t.u, 0.0);
        assert!((t.p - 2.0 / 70.0).abs() < 1e-12, "{t:?}");
        assert!((t.min_p - 2.0 / 70.0).abs() < 1e-12);
        // Separated samples of 5 and 5: p = 2 / C(10, 5) = 2/252.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((t.p - 2.0 / 252.0).abs() < 1e-12);
        // identical samples: nothing to see
        let t = mann_whitney(&[3.0, 3.0, 3.0], &[3.0, 3.0, 3.0]).unwrap();
        assert_eq!(t.p, 1.0);
        // one value each can never be significant
        let t = mann_whitney(&[1.0], &[9.0]).unwrap();
        assert_eq!(t.min_p, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    #[test]
    fn ties_and_the_normal_approximation() {
        // Two constant but different samples of 10 each are completely separated.
        let a = vec![0.0; 10];
        let b = vec![1.0; 10];
        let t = mann_whitney(&a, &b).unwrap();
        assert!(t.exact);
        assert!((t.p - 2.0 / binomial(20, 10)).abs() < 1e-15, "{t:?}");
        // 30 + 30: normal approximation; separated samples give a tiny p.
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (100..130).map(f64::from).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(!t.exact);
        assert!(t.p < 1e-9, "{t:?}");
        // interleaved samples: no difference
        let a: Vec<f64> = (0..30).map(|i| f64::from(2 * i)).collect();
        let b: Vec<f64> = (0..30).map(|i| f64::from(2 * i + 1)).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(t.p > 0.5, "{t:?}");
        // erfc at known points
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_2).abs() < 1e-6);
    }
}
