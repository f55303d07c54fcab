//! From replications to a recommendation: each candidate's objectives and
//! constraints, the Pareto set of the feasible candidates (none better in
//! every objective), the ranking successive halving promotes by
//! (constrained non-dominated sorting, as in NSGA-II: feasible before
//! infeasible, then by front), and the one recommendation.

use super::metric::statistic;
use super::setup::Setup;
use crate::spec::tune::{Goal, Recommend};
use serde::{Deserialize, Serialize};

/// Per measure, the value of each replication.
pub type Values = Vec<Vec<Option<f64>>>;

/// Whether a constraint held, and the figure it was judged on: the
/// statistic, or the share of replications in which it held.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct ConstraintOutcome {
    pub holds: bool,
    pub value: Option<f64>,
}

/// One candidate judged on its replications.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Per objective; `None` when no replication had a value.
    pub objectives: Vec<Option<f64>>,
    /// Per objective: the replications that had no value and took the
    /// objective's `missing` stand-in instead.
    pub stand_ins: Vec<usize>,
    pub constraints: Vec<ConstraintOutcome>,
    pub feasible: bool,
}

/// Judges a candidate on its values (per measure, per replication).
pub fn evaluate(setup: &Setup, values: &Values) -> Evaluation {
    let objectives: Vec<Option<f64>> = setup
        .objectives
        .iter()
        .map(|o| statistic(&values[o.measure], o.stat, o.missing))
        .collect();
    let stand_ins: Vec<usize> = setup
        .objectives
        .iter()
        .map(|o| match o.missing {
            Some(_) => values[o.measure].iter().filter(|v| v.is_none()).count(),
            None => 0,
        })
        .collect();
    let constraints: Vec<ConstraintOutcome> = setup
        .constraints
        .iter()
        .map(|c| {
            let vals = &values[c.measure];
            match c.stat {
                Some(stat) => {
                    let v = statistic(vals, stat, c.missing);
                    ConstraintOutcome {
                        holds: v.is_some_and(|x| c.op.holds(x, c.bound)),
                        value: v,
                    }
                }
                None => {
                    let met = vals
                        .iter()
                        .filter(|v| v.or(c.missing).is_some_and(|x| c.op.holds(x, c.bound)))
                        .count();
                    let share = met as f64 / vals.len().max(1) as f64;
                    ConstraintOutcome {
                        // A share is a ratio of small integers: no rounding slack is needed
                        // beyond the float comparison of two exact quotients.
                        holds: !vals.is_empty() && share >= c.fraction - 1e-12,
                        value: Some(crate::stats::round6(share)),
                    }
                }
            }
        })
        .collect();
    let feasible = constraints.iter().all(|c| c.holds);
    Evaluation {
        objectives,
        stand_ins,
        constraints,
        feasible,
    }
}

/// The objectives as numbers to minimize: maximized ones negated, a
/// missing value the worst.
pub fn oriented(setup: &Setup, e: &Evaluation) -> Vec<f64> {
    setup
        .objectives
        .iter()
        .zip(&e.objectives)
        .map(|(o, v)| match (v, o.goal) {
            (None, _) => f64::INFINITY,
            (Some(x), Goal::Minimize) => *x,
            (Some(x), Goal::Maximize) => -*x,
        })
        .collect()
}

/// `a` is no worse than `b` in every objective and better in one.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
}

/// The non-dominated front of each point: 0 for the Pareto set, 1 for the
/// set that is non-dominated once it is removed, and so on.
pub fn fronts(points: &[Vec<f64>]) -> Vec<usize> {
    let n = points.len();
    let mut rank = vec![usize::MAX; n];
    let mut left: Vec<usize> = (0..n).collect();
    let mut r = 0;
    while !left.is_empty() {
        let front: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| {
                !left
                    .iter()
                    .any(|&j| j != i && dominates(&points[j], &points[i]))
            })
            .collect();
        for &i in &front {
            rank[i] = r;
        }
        left.retain(|i| rank[*i] == usize::MAX);
        r += 1;
    }
    rank
}

/// The Pareto set: of `judged` (candidate, evaluation), the feasible ones
/// that no feasible one dominates, in candidate order.
pub fn pareto(setup: &Setup, judged: &[(usize, &Evaluation)]) -> Vec<usize> {
    let feasible: Vec<(usize, Vec<f64>)> = judged
        .iter()
        .filter(|(_, e)| e.feasible)
        .map(|(c, e)| (*c, oriented(setup, e)))
        .collect();
    let points: Vec<Vec<f64>> = feasible.iter().map(|(_, p)| p.clone()).collect();
    let rank = fronts(&points);
    let mut set: Vec<usize> = feasible
        .iter()
        .zip(&rank)
        .filter(|(_, r)| **r == 0)
        .map(|((c, _), _)| *c)
        .collect();
    set.sort_unstable();
    set
}

/// Each candidate's weighted score over `judged`: the sum of its weighted
/// objectives, each scaled to 0..1 between the best and the worst of
/// `judged` (a missing value counts 1, an objective all share counts 0).
pub fn scores(setup: &Setup, judged: &[(usize, &Evaluation)]) -> Vec<f64> {
    let points: Vec<Vec<f64>> = judged.iter().map(|(_, e)| oriented(setup, e)).collect();
    let k = setup.objectives.len();
    let mut lo = vec![f64::INFINITY; k];
    let mut hi = vec![f64::NEG_INFINITY; k];
    for p in &points {
        for (j, &x) in p.iter().enumerate() {
            if x.is_finite() {
                lo[j] = lo[j].min(x);
                hi[j] = hi[j].max(x);
            }
        }
    }
    points
        .iter()
        .map(|p| {
            let s: f64 = p
                .iter()
                .enumerate()
                .map(|(j, &x)| {
                    let scaled = if !x.is_finite() {
                        1.0
                    } else if hi[j] > lo[j] {
                        (x - lo[j]) / (hi[j] - lo[j])
                    } else {
                        0.0
                    };
                    setup.objectives[j].weight * scaled
                })
                .sum();
            crate::stats::round6(s)
        })
        .collect()
}

/// The recommendation on the Pareto set `set` (candidates of `judged`), by
/// the tune file's preference, with its weighted score. Ties go to the
/// better first objective, then the lower candidate index.
pub fn recommend(
    setup: &Setup,
    judged: &[(usize, &Evaluation)],
    set: &[usize],
) -> Option<(usize, f64)> {
    let on: Vec<(usize, &Evaluation)> = judged
        .iter()
        .filter(|(c, _)| set.contains(c))
        .copied()
        .collect();
    let score = scores(setup, &on);
    let mut order: Vec<usize> = (0..on.len()).collect();
    let lex = |i: usize, j: usize| {
        let (a, b) = (oriented(setup, on[i].1), oriented(setup, on[j].1));
        a.iter()
            .zip(&b)
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(on[i].0.cmp(&on[j].0))
    };
    match setup.recommend {
        Recommend::Weighted => {
            order.sort_by(|&i, &j| score[i].total_cmp(&score[j]).then(lex(i, j)))
        }
        Recommend::Lexicographic => order.sort_by(|&i, &j| lex(i, j)),
    }
    order.first().map(|&i| (on[i].0, score[i]))
}

/// `judged` from best to worst, as successive halving promotes: feasible
/// before infeasible (fewer constraints broken first), then by front, then
/// by weighted score, then by candidate index.
pub fn ranking(setup: &Setup, judged: &[(usize, &Evaluation)]) -> Vec<usize> {
    let broken: Vec<usize> = judged
        .iter()
        .map(|(_, e)| e.constraints.iter().filter(|c| !c.holds).count())
        .collect();
    let mut rank = vec![0; judged.len()];
    let mut classes: Vec<usize> = broken.clone();
    classes.sort_unstable();
    classes.dedup();
    for b in classes {
        let members: Vec<usize> = (0..judged.len()).filter(|&i| broken[i] == b).collect();
        let pts: Vec<Vec<f64>> = members
            .iter()
            .map(|&i| oriented(setup, judged[i].1))
            .collect();
        for (m, f) in members.iter().zip(fronts(&pts)) {
            rank[*m] = f;
        }
    }
    let score = scores(setup, judged);
    let mut order: Vec<usize> = (0..judged.len()).collect();
    order.sort_by(|&i, &j| {
        broken[i]
            .cmp(&broken[j])
            .then(rank[i].cmp(&rank[j]))
            .then(score[i].total_cmp(&score[j]))
            .then(judged[i].0.cmp(&judged[j].0))
    });
    order.into_iter().map(|i| judged[i].0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dominance_needs_one_strict_improvement() {
        assert!(dominates(&[1.0, 2.0], &[1.0, 3.0]));
        assert!(!dominates(&[1.0, 2.0], &[1.0, 2.0]));
        assert!(!dominates(&[0.0, 3.0], &[1.0, 2.0]));
        assert!(dominates(&[1.0, 2.0], &[1.0, f64::INFINITY]));
    }

    #[test]
    fn fronts_peel_the_non_dominated_sets() {
        // (0,3) (1,1) (3,0) are the frontier; (2,2) is behind (1,1); (3,3) behind all.
        let pts = vec![
            vec![0.0, 3.0],
            vec![2.0, 2.0],
            vec![1.0, 1.0],
            vec![3.0, 0.0],
            vec![3.0, 3.0],
        ];
        assert_eq!(fronts(&pts), vec![0, 1, 0, 0, 2]);
    }
}
