//! Where a what-if run goes: `hcsim run MODEL --set PATH=VALUE` writes to a
//! directory of its own, named after what it changed
//! (`output/<model>--rate_per_s=10000/`), so it never overwrites the run it
//! is compared with. The name is deterministic, filesystem-safe and short.

use crate::spec::overrides::{Override, safe_name};

/// Longest part of a directory name that describes the overrides, in bytes
/// (the hash that a shortened or rewritten name ends with included).
const MAX_SUFFIX: usize = 69;

/// The name of a run's output directory under `output/`: `label` when given,
/// the model's name when nothing was overridden, else
/// `<model>--<what changed>`: the overrides by their one short name
/// ([`Override::label`]: `rate_per_s=10000,A.weight=5`). Characters other
/// than letters, digits and `._=+,-` become `-`; a name that had to be
/// rewritten or shortened ends with 8 hex digits of a hash of the overrides
/// as given, so different overrides never share a directory.
pub fn run_dir_name(model: &str, set: &[Override], label: Option<&str>) -> Result<String, String> {
    if let Some(label) = label {
        check_label(label)?;
        return Ok(label.to_string());
    }
    if set.is_empty() {
        return Ok(model.to_string());
    }
    let identity = Override::texts(set).join("\n");
    Ok(format!(
        "{model}--{}",
        safe_name(&Override::label(set), &identity, MAX_SUFFIX)
    ))
}

/// A label names a directory: one plain component.
fn check_label(label: &str) -> Result<(), String> {
    let plain = !label.is_empty()
        && label != "."
        && label != ".."
        && !label.starts_with('-')
        && !label.contains(['/', '\\', '\0']);
    if plain {
        Ok(())
    } else {
        Err(format!(
            "--label {label:?}: a label names a directory under output/: use a plain name without `/`, e.g. --label rate-10k"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(set: &[&str]) -> String {
        let set: Vec<Override> = set.iter().map(|s| Override::parse(s).unwrap()).collect();
        run_dir_name("m", &set, None).unwrap()
    }

    #[test]
    fn names_say_what_changed() {
        assert_eq!(name(&[]), "m");
        assert_eq!(name(&["clients.rate_per_s=10000"]), "m--rate_per_s=10000");
        assert_eq!(
            name(&["clients.rate_per_s=10000", "policy.fail_timeout=30s"]),
            "m--rate_per_s=10000,fail_timeout=30s"
        );
        assert_eq!(name(&["nodes.A.weight=5"]), "m--A.weight=5");
        assert_eq!(name(&["faults[0].at=1.5s"]), "m--faults0.at=1.5s");
        assert_eq!(name(&["duration=5s"]), "m--duration=5s");
    }

    #[test]
    fn rewritten_or_long_names_get_a_hash() {
        let a = name(&[r#"policy={"kind":"none"}"#]);
        assert!(a.starts_with("m--policy=-kind-none-"), "{a}");
        assert_eq!(a.len(), "m--policy=-kind-none-".len() + 8, "{a}");
        let b = name(&[r#"policy={"kind":"max_fails"}"#]);
        assert_ne!(a, b);
        let long = "x".repeat(200);
        let l = name(&[&format!("description={long}")]);
        assert!(l.len() <= 3 + MAX_SUFFIX + 9, "{l}");
        assert_eq!(l, name(&[&format!("description={long}")]));
    }

    #[test]
    fn labels_are_plain_names() {
        let set = vec![Override::parse("clients.rate_per_s=1").unwrap()];
        assert_eq!(run_dir_name("m", &set, Some("fast")).unwrap(), "fast");
        assert!(run_dir_name("m", &set, Some("a/b")).is_err());
        assert!(run_dir_name("m", &set, Some("..")).is_err());
        assert!(run_dir_name("m", &set, Some("")).is_err());
    }
}
