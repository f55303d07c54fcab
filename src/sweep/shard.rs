//! `--shard K/N` (or `--shard auto`): which runs of a sweep one machine runs.
//!
//! `auto` reads K and N from the variables an array engine gives each of its
//! tasks ([`resolve`] takes them as a map, so that every engine is tested
//! without touching the process's environment):
//!
//! | engine | index | total | a retry |
//! |---|---|---|---|
//! | Slurm job array | `SLURM_ARRAY_TASK_ID` (from `_MIN` by `_STEP`) | `SLURM_ARRAY_TASK_COUNT` | `SLURM_RESTART_COUNT` > 0 |
//! | AWS Batch array job | `AWS_BATCH_JOB_ARRAY_INDEX` (0-based) | `AWS_BATCH_JOB_ARRAY_SIZE` | `AWS_BATCH_JOB_ATTEMPT` > 1 |
//! | Google Cloud Batch | `BATCH_TASK_INDEX` (0-based) | `BATCH_TASK_COUNT` | `BATCH_TASK_RETRY_ATTEMPT` > 0 |
//! | Cloud Run job | `CLOUD_RUN_TASK_INDEX` (0-based) | `CLOUD_RUN_TASK_COUNT` | `CLOUD_RUN_TASK_ATTEMPT` > 0 |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` (0-based) | none: `--shards N` | not told |
//!
//! An absent environment, two engines at once, an array that is not an
//! evenly spaced range, an index outside the total or a single task is
//! refused with a message naming the variables it read.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
        match s.parse::<ShardArg>() {
            Ok(ShardArg::Given { k, n }) if k >= 1 => Ok(Shard { k, n }),
            _ => Err(format!(
                "expected K/N with 1 <= K <= N, e.g. 2/8, found \"{s}\""
            )),
        }
    }
}

fn bad_shard(s: &str) -> String {
    format!("expected K/N with 1 <= K <= N, e.g. 2/8, or auto, found \"{s}\"")
}

/// What `--shard` says, as written: `K/N` (K counted from `--shard-base`,
/// 1 unless told) or `auto` (from the array engine's variables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    Given { k: u32, n: u32 },
    Auto,
}

impl FromStr for ShardArg {
    type Err = String;
    /// `auto`, or `K/N` with `0 <= K <= N` and `N >= 1` (whether K may be 0
    /// or N depends on `--shard-base`, checked by [`resolve`]).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "auto" {
            return Ok(ShardArg::Auto);
        }
        let (k, n) = s.split_once('/').ok_or_else(|| bad_shard(s))?;
        let k: u32 = k.trim().parse().map_err(|_| bad_shard(s))?;
        let n: u32 = n.trim().parse().map_err(|_| bad_shard(s))?;
        if n == 0 || k > n {
            return Err(bad_shard(s));
        }
        Ok(ShardArg::Given { k, n })
    }
}

/// The shard a process runs and, with `--shard auto`, where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub shard: Shard,
    /// With `auto`: the engine and its variables, e.g. `Slurm array task
    /// SLURM_ARRAY_TASK_ID=0 of 0-3`.
    pub source: Option<String>,
    /// With `auto`, when the engine says this task is a retry: the variable
    /// that says so, e.g. `SLURM_RESTART_COUNT=1`.
    pub retry: Option<String>,
}

impl Placement {
    pub const WHOLE: Placement = Placement {
        shard: Shard::WHOLE,
        source: None,
        retry: None,
    };
}

/// One array engine's variables.
struct Engine {
    name: &'static str,
    index: &'static str,
    /// The number of tasks, when the engine tells it.
    total: Option<&'static str>,
    /// The attempt or restart counter, and its value on the first attempt.
    attempt: Option<(&'static str, u32)>,
}

const SLURM: Engine = Engine {
    name: "Slurm array task",
    index: "SLURM_ARRAY_TASK_ID",
    total: Some("SLURM_ARRAY_TASK_COUNT"),
    attempt: Some(("SLURM_RESTART_COUNT", 0)),
};

/// Every engine `--shard auto` knows, in the order its messages name them.
const ENGINES: [Engine; 5] = [
    SLURM,
    Engine {
        name: "AWS Batch array job",
        index: "AWS_BATCH_JOB_ARRAY_INDEX",
        total: Some("AWS_BATCH_JOB_ARRAY_SIZE"),
        attempt: Some(("AWS_BATCH_JOB_ATTEMPT", 1)),
    },
    Engine {
        name: "Google Cloud Batch task",
        index: "BATCH_TASK_INDEX",
        total: Some("BATCH_TASK_COUNT"),
        attempt: Some(("BATCH_TASK_RETRY_ATTEMPT", 0)),
    },
    Engine {
        name: "Cloud Run job task",
        index: "CLOUD_RUN_TASK_INDEX",
        total: Some("CLOUD_RUN_TASK_COUNT"),
        attempt: Some(("CLOUD_RUN_TASK_ATTEMPT", 0)),
    },
    Engine {
        name: "Kubernetes Indexed Job",
        index: "JOB_COMPLETION_INDEX",
        total: None,
        attempt: None,
    },
];

/// The shard that `--shard` (`arg`, absent for the whole sweep),
/// `--shard-base` (`base`, 0 or 1) and `--shards` (`shards`) name, reading an
/// array engine's variables from `env` for `auto`. `Err` is the message for
/// the user: it names the flags or the variables that are wrong.
pub fn resolve(
    arg: Option<ShardArg>,
    base: Option<u32>,
    shards: Option<u32>,
    env: &BTreeMap<String, String>,
) -> Result<Placement, String> {
    match arg {
        None => Ok(Placement::WHOLE),
        Some(ShardArg::Given { k, n }) => {
            if shards.is_some() {
                return Err(format!(
                    "--shards goes with --shard auto (with --shard {k}/{n}, N is {n})"
                ));
            }
            let k = match base.unwrap_or(1) {
                0 if k < n => k + 1,
                0 => {
                    return Err(format!(
                        "--shard {k}/{n} with --shard-base 0: K counts from 0, so 0 <= K < N (the last shard of {n} is {}/{n})",
                        n - 1
                    ));
                }
                _ if k == 0 => {
                    return Err(format!(
                        "--shard 0/{n}: K counts from 1 (1 <= K <= N); if your task indices count from 0, add --shard-base 0"
                    ));
                }
                _ => k,
            };
            Ok(Placement {
                shard: Shard { k, n },
                source: None,
                retry: None,
            })
        }
        Some(ShardArg::Auto) => {
            if let Some(b) = base {
                return Err(format!(
                    "--shard-base {b} goes with --shard K/N: --shard auto counts as the array engine does"
                ));
            }
            auto(shards, env)
        }
    }
}

/// `--shard auto`: K and N from the one engine whose index variable is set.
fn auto(shards: Option<u32>, env: &BTreeMap<String, String>) -> Result<Placement, String> {
    let found: Vec<&Engine> = ENGINES
        .iter()
        .filter(|e| env.contains_key(e.index))
        .collect();
    let engine = match found[..] {
        [e] => e,
        [] => return Err(no_engine(env)),
        _ => {
            let set: Vec<String> = found
                .iter()
                .map(|e| format!("{}={} ({})", e.index, env[e.index], e.name))
                .collect();
            return Err(format!(
                "--shard auto: ambiguous environment: {} are all set; pass --shard K/N",
                set.join(", ")
            ));
        }
    };
    let (k, n, source) = if engine.index == SLURM.index {
        slurm(shards, env)?
    } else {
        zero_based(engine, shards, env)?
    };
    if n == 1 {
        return Err(format!(
            "--shard auto: {source} is the only task, so there is nothing to split: run without --shard, or, to rerun one shard of a larger split, pass --shard K/N (hcsim merge prints it)"
        ));
    }
    let retry = match engine.attempt {
        Some((var, first)) => match env.get(var) {
            Some(v) if number(var, v)? > first => Some(format!("{var}={v}")),
            _ => None,
        },
        None => None,
    };
    Ok(Placement {
        shard: Shard { k, n },
        source: Some(source),
        retry,
    })
}

/// The refusal when no engine's index is set: every variable looked for,
/// and a hint when a job of some engine runs but is not an array task.
fn no_engine(env: &BTreeMap<String, String>) -> String {
    let looked: Vec<String> = ENGINES
        .iter()
        .map(|e| format!("{} ({})", e.index, e.name))
        .collect();
    let mut msg = format!(
        "--shard auto: none of {} is set; run it as a task of one of these arrays, or pass --shard K/N",
        looked.join(", ")
    );
    for (job, what) in [
        (
            "SLURM_JOB_ID",
            "a Slurm job that is not an array task (submit it with sbatch --array=FROM-TO)",
        ),
        (
            "AWS_BATCH_JOB_ID",
            "an AWS Batch job that is not an array child (submit it with --array-properties size=N)",
        ),
    ] {
        if let Some(v) = env.get(job) {
            msg += &format!("; {job}={v} is set: this is {what}");
        }
    }
    msg
}

/// `var`'s value as a whole number.
fn number(var: &str, v: &str) -> Result<u32, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("--shard auto: {var}={v:?} is not a whole number"))
}

/// The engine's total, or `--shards N` where the engine tells none; both
/// given must agree.
fn total(
    engine: &Engine,
    shards: Option<u32>,
    env: &BTreeMap<String, String>,
) -> Result<u32, String> {
    let told = match engine.total.and_then(|var| env.get(var).map(|v| (var, v))) {
        Some((var, v)) => Some((var, number(var, v)?)),
        None => None,
    };
    match (told, shards) {
        (Some((_, t)), None) => Ok(t),
        (Some((var, t)), Some(s)) if s != t => Err(format!(
            "--shard auto: --shards {s} but {var}={t}: drop --shards, or make them agree"
        )),
        (Some((_, t)), Some(_)) => Ok(t),
        (None, Some(s)) => Ok(s),
        (None, None) => Err(match engine.total {
            Some(var) => format!(
                "--shard auto: {}={} but {var} is not set: pass the number of tasks with --shards N",
                engine.index, env[engine.index]
            ),
            None => format!(
                "--shard auto: a {} tells its index ({}={}) but not how many there are: pass --shards N, N the Job's completions",
                engine.name, engine.index, env[engine.index]
            ),
        }),
    }
}

/// An engine whose index counts from 0 to the total - 1.
fn zero_based(
    engine: &Engine,
    shards: Option<u32>,
    env: &BTreeMap<String, String>,
) -> Result<(u32, u32, String), String> {
    let i = number(engine.index, &env[engine.index])?;
    let n = total(engine, shards, env)?;
    let source = format!("{} {}={i} of {n}", engine.name, engine.index);
    if n == 0 || i >= n {
        return Err(format!(
            "--shard auto: {source}: the index counts from 0 and must be below the number of tasks"
        ));
    }
    Ok((i + 1, n, source))
}

/// A Slurm array task: K is the task's place in `MIN, MIN+STEP, ... MAX`
/// and N the number of tasks; an array that is not such a range
/// (`--array=1,3,8`) cannot tell K from the task's ID and is refused.
fn slurm(
    shards: Option<u32>,
    env: &BTreeMap<String, String>,
) -> Result<(u32, u32, String), String> {
    let get = |var: &str| -> Result<u32, String> {
        match env.get(var) {
            Some(v) => number(var, v),
            None => Err(format!(
                "--shard auto: SLURM_ARRAY_TASK_ID={} but {var} is not set (this Slurm does not describe its arrays): pass --shard K/N",
                env[SLURM.index]
            )),
        }
    };
    let id = get("SLURM_ARRAY_TASK_ID")?;
    let min = get("SLURM_ARRAY_TASK_MIN")?;
    let step = get("SLURM_ARRAY_TASK_STEP")?.max(1);
    let n = total(&SLURM, shards, env)?;
    let max = match env.get("SLURM_ARRAY_TASK_MAX") {
        Some(v) => number("SLURM_ARRAY_TASK_MAX", v)?,
        None => min + (n.max(1) - 1) * step,
    };
    let range = if step == 1 {
        format!("{min}-{max}")
    } else {
        format!("{min}-{max}:{step}")
    };
    let source = format!("Slurm array task SLURM_ARRAY_TASK_ID={id} of {range}");
    let vars = format!("SLURM_ARRAY_TASK_MIN={min}, _MAX={max}, _STEP={step}, _COUNT={n}");
    if max < min || n != (max - min) / step + 1 {
        return Err(format!(
            "--shard auto: this Slurm array is not an evenly spaced range ({vars}), so K cannot be told from SLURM_ARRAY_TASK_ID={id}: submit it with --array=FROM-TO[:STEP], or pass --shard K/N"
        ));
    }
    if id < min || id > max || (id - min) % step != 0 {
        return Err(format!(
            "--shard auto: SLURM_ARRAY_TASK_ID={id} is not a task of the array {range} ({vars})"
        ));
    }
    Ok(((id - min) / step + 1, n, source))
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

    fn env(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn auto(vars: &[(&str, &str)], shards: Option<u32>) -> Result<Placement, String> {
        resolve(Some(ShardArg::Auto), None, shards, &env(vars))
    }

    fn kn(vars: &[(&str, &str)], shards: Option<u32>) -> (u32, u32) {
        let p = auto(vars, shards).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
        (p.shard.k, p.shard.n)
    }

    fn refusal(vars: &[(&str, &str)], shards: Option<u32>) -> String {
        match auto(vars, shards) {
            Err(e) => e,
            Ok(p) => panic!("{vars:?} gave {p:?}"),
        }
    }

    /// The variables Slurm 22.05 set in the tasks of `sbatch --array=...`
    /// (printed by a task of each array on a one-node cluster).
    fn slurm(
        id: &str,
        min: &str,
        max: &str,
        step: &str,
        count: &str,
    ) -> Vec<(&'static str, String)> {
        vec![
            ("SLURM_JOB_ID", "17".into()),
            ("SLURM_ARRAY_JOB_ID", "12".into()),
            ("SLURM_ARRAY_TASK_ID", id.into()),
            ("SLURM_ARRAY_TASK_MIN", min.into()),
            ("SLURM_ARRAY_TASK_MAX", max.into()),
            ("SLURM_ARRAY_TASK_STEP", step.into()),
            ("SLURM_ARRAY_TASK_COUNT", count.into()),
        ]
    }

    fn slurm_kn(vars: Vec<(&'static str, String)>) -> Result<(u32, u32), String> {
        let v: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        auto(&v, None).map(|p| (p.shard.k, p.shard.n))
    }

    #[test]
    fn slurm_arrays_map_to_k_of_n_whatever_their_base_and_step() {
        // --array=0-3: 0-based.
        for (id, k) in [("0", 1), ("1", 2), ("3", 4)] {
            assert_eq!(slurm_kn(slurm(id, "0", "3", "1", "4")), Ok((k, 4)));
        }
        // --array=1-16: 1-based.
        assert_eq!(slurm_kn(slurm("1", "1", "16", "1", "16")), Ok((1, 16)));
        assert_eq!(slurm_kn(slurm("16", "1", "16", "1", "16")), Ok((16, 16)));
        // --array=1-7:2: tasks 1, 3, 5, 7.
        for (id, k) in [("1", 1), ("3", 2), ("5", 3), ("7", 4)] {
            assert_eq!(slurm_kn(slurm(id, "1", "7", "2", "4")), Ok((k, 4)));
        }
        // --array=10-40:10%2 (a throttle changes nothing).
        assert_eq!(slurm_kn(slurm("30", "10", "40", "10", "4")), Ok((3, 4)));
        let p = auto(
            &[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "3"),
                ("SLURM_ARRAY_TASK_STEP", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
                ("SLURM_RESTART_COUNT", "1"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(p.shard, Shard { k: 3, n: 4 });
        assert_eq!(
            p.source.as_deref(),
            Some("Slurm array task SLURM_ARRAY_TASK_ID=2 of 0-3")
        );
        assert_eq!(p.retry.as_deref(), Some("SLURM_RESTART_COUNT=1"));
        let first = slurm_kn(slurm("2", "0", "3", "1", "4"));
        assert_eq!(first, Ok((3, 4)));
    }

    #[test]
    fn slurm_arrays_that_cannot_tell_k_are_refused() {
        // --array=1,3,8: COUNT=3 but MIN..MAX holds 8 steps.
        let e = slurm_kn(slurm("8", "1", "8", "1", "3")).unwrap_err();
        assert!(e.contains("not an evenly spaced range"), "{e}");
        assert!(
            e.contains("SLURM_ARRAY_TASK_MIN=1, _MAX=8, _STEP=1, _COUNT=3"),
            "{e}"
        );
        // An ID off the steps, or outside the range.
        let e = slurm_kn(slurm("4", "1", "7", "2", "4")).unwrap_err();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=4 is not a task of the array 1-7:2"),
            "{e}"
        );
        let e = slurm_kn(slurm("9", "1", "7", "2", "4")).unwrap_err();
        assert!(e.contains("is not a task of the array"), "{e}");
        // --array=5 (a one-task rerun): N would be 1.
        let e = slurm_kn(slurm("5", "5", "5", "1", "1")).unwrap_err();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=5 of 5-5 is the only task"),
            "{e}"
        );
        assert!(e.contains("pass --shard K/N"), "{e}");
        // Variables an old Slurm lacks.
        let e = refusal(&[("SLURM_ARRAY_TASK_ID", "3")], None);
        assert!(e.contains("SLURM_ARRAY_TASK_MIN is not set"), "{e}");
        let e = refusal(
            &[("SLURM_ARRAY_TASK_ID", "x"), ("SLURM_ARRAY_TASK_MIN", "0")],
            None,
        );
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=\"x\" is not a whole number"),
            "{e}"
        );
        // A missing count is taken from --shards.
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_STEP", "1"),
        ];
        assert_eq!(kn(&vars, Some(4)), (3, 4));
        let e = refusal(&vars, None);
        assert!(
            e.contains(
                "SLURM_ARRAY_TASK_COUNT is not set: pass the number of tasks with --shards N"
            ),
            "{e}"
        );
    }

    #[test]
    fn cloud_engines_count_from_zero() {
        let aws = [
            ("AWS_BATCH_JOB_ID", "ab12:3"),
            ("AWS_BATCH_JOB_ARRAY_INDEX", "3"),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "8"),
            ("AWS_BATCH_JOB_ATTEMPT", "1"),
        ];
        assert_eq!(kn(&aws, None), (4, 8));
        assert_eq!(auto(&aws, None).unwrap().retry, None);
        let mut retried = aws.to_vec();
        retried[3] = ("AWS_BATCH_JOB_ATTEMPT", "2");
        assert_eq!(
            auto(&retried, None).unwrap().retry.as_deref(),
            Some("AWS_BATCH_JOB_ATTEMPT=2")
        );
        let gcb = [("BATCH_TASK_INDEX", "0"), ("BATCH_TASK_COUNT", "16")];
        assert_eq!(kn(&gcb, None), (1, 16));
        let run = [
            ("CLOUD_RUN_TASK_INDEX", "9"),
            ("CLOUD_RUN_TASK_COUNT", "10"),
            ("CLOUD_RUN_TASK_ATTEMPT", "0"),
        ];
        assert_eq!(kn(&run, None), (10, 10));
        // The total agrees with --shards, or is refused.
        assert_eq!(kn(&gcb, Some(16)), (1, 16));
        let e = refusal(&gcb, Some(8));
        assert!(e.contains("--shards 8 but BATCH_TASK_COUNT=16"), "{e}");
        // An index at or past the total.
        let e = refusal(
            &[
                ("CLOUD_RUN_TASK_INDEX", "10"),
                ("CLOUD_RUN_TASK_COUNT", "10"),
            ],
            None,
        );
        assert!(
            e.contains("Cloud Run job task CLOUD_RUN_TASK_INDEX=10 of 10"),
            "{e}"
        );
        // One task: nothing to split.
        let e = refusal(
            &[("BATCH_TASK_INDEX", "0"), ("BATCH_TASK_COUNT", "1")],
            None,
        );
        assert!(e.contains("is the only task"), "{e}");
        // A missing total.
        let e = refusal(&[("AWS_BATCH_JOB_ARRAY_INDEX", "3")], None);
        assert!(e.contains("AWS_BATCH_JOB_ARRAY_SIZE is not set"), "{e}");
        assert_eq!(kn(&[("AWS_BATCH_JOB_ARRAY_INDEX", "3")], Some(4)), (4, 4));
    }

    #[test]
    fn a_kubernetes_indexed_job_needs_shards() {
        let k8s = [("JOB_COMPLETION_INDEX", "0")];
        assert_eq!(kn(&k8s, Some(16)), (1, 16));
        assert_eq!(kn(&[("JOB_COMPLETION_INDEX", "15")], Some(16)), (16, 16));
        let e = refusal(&k8s, None);
        assert!(e.contains("JOB_COMPLETION_INDEX=0"), "{e}");
        assert!(e.contains("pass --shards N"), "{e}");
        let e = refusal(&[("JOB_COMPLETION_INDEX", "16")], Some(16));
        assert!(e.contains("must be below the number of tasks"), "{e}");
    }

    #[test]
    fn absent_or_ambiguous_environments_are_refused_naming_the_variables() {
        let e = refusal(&[("HOME", "/root")], None);
        for var in [
            "SLURM_ARRAY_TASK_ID",
            "AWS_BATCH_JOB_ARRAY_INDEX",
            "BATCH_TASK_INDEX",
            "CLOUD_RUN_TASK_INDEX",
            "JOB_COMPLETION_INDEX",
        ] {
            assert!(e.contains(var), "{var} in {e}");
        }
        let e = refusal(&[("SLURM_JOB_ID", "42")], None);
        assert!(
            e.contains("SLURM_JOB_ID=42 is set: this is a Slurm job that is not an array task"),
            "{e}"
        );
        let e = refusal(&[("AWS_BATCH_JOB_ID", "x")], None);
        assert!(e.contains("not an array child"), "{e}");
        let e = refusal(
            &[
                ("JOB_COMPLETION_INDEX", "1"),
                ("BATCH_TASK_INDEX", "1"),
                ("BATCH_TASK_COUNT", "4"),
            ],
            Some(4),
        );
        assert!(e.contains("ambiguous"), "{e}");
        assert!(
            e.contains("BATCH_TASK_INDEX=1 (Google Cloud Batch task)"),
            "{e}"
        );
        assert!(
            e.contains("JOB_COMPLETION_INDEX=1 (Kubernetes Indexed Job)"),
            "{e}"
        );
    }

    #[test]
    fn a_zero_based_k_needs_shard_base_0() {
        let none = BTreeMap::new();
        let given = |s: &str, base| resolve(Some(s.parse().unwrap()), base, None, &none);
        assert_eq!(given("2/4", None).unwrap().shard, Shard { k: 2, n: 4 });
        assert_eq!(given("4/4", Some(1)).unwrap().shard, Shard { k: 4, n: 4 });
        assert_eq!(given("0/4", Some(0)).unwrap().shard, Shard { k: 1, n: 4 });
        assert_eq!(given("3/4", Some(0)).unwrap().shard, Shard { k: 4, n: 4 });
        let e = given("0/4", None).unwrap_err();
        assert!(e.contains("add --shard-base 0"), "{e}");
        let e = given("4/4", Some(0)).unwrap_err();
        assert!(e.contains("0 <= K < N"), "{e}");
        for bad in ["5/4", "1/0", "x", "-1/4", "auto/4"] {
            let e = bad.parse::<ShardArg>().unwrap_err();
            assert!(e.contains("expected K/N with 1 <= K <= N"), "{e}");
        }
        assert_eq!("auto".parse::<ShardArg>(), Ok(ShardArg::Auto));
        let e = resolve(Some(ShardArg::Auto), Some(0), None, &none).unwrap_err();
        assert!(e.contains("--shard-base 0 goes with --shard K/N"), "{e}");
        let e = resolve(Some("1/4".parse().unwrap()), None, Some(4), &none).unwrap_err();
        assert!(e.contains("--shards goes with --shard auto"), "{e}");
        assert_eq!(resolve(None, None, None, &none), Ok(Placement::WHOLE));
    }
}
