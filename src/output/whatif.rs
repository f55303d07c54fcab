//! Where a what-if run goes: `hcsim run MODEL --set PATH=VALUE` writes to a
//! directory of its own, named after what it changed
//! (`output/<model>--rate_per_s=10000/`), so it never overwrites the run it
//! is compared with. The name is deterministic, filesystem-safe and short.

/// Longest part of a directory name that describes the overrides, in bytes
/// (before the hash that a shortened or rewritten name gets).
const MAX_SUFFIX: usize = 60;

/// The name of a run's output directory under `output/`: `label` when given,
/// the model's name when nothing was overridden, else
/// `<model>--<what changed>`: each `--set PATH=VALUE` as the last part of its
/// path (with the list item it is in: `A.weight`, `faults0.at`) and its value,
/// joined by `,`. Characters other than letters, digits and `._=+-` become
/// `-`; a name that had to be rewritten or shortened ends with 8 hex digits
/// of a hash of the overrides as given, so different overrides never share
/// a directory.
pub fn run_dir_name(model: &str, set: &[String], label: Option<&str>) -> Result<String, String> {
    if let Some(label) = label {
        check_label(label)?;
        return Ok(label.to_string());
    }
    if set.is_empty() {
        return Ok(model.to_string());
    }
    let raw: Vec<String> = set.iter().map(|s| short_override(s)).collect();
    let raw = raw.join(",");
    let mut safe = sanitize(&raw);
    let rewritten = safe != raw || safe.len() > MAX_SUFFIX;
    if rewritten {
        let mut cut = MAX_SUFFIX.min(safe.len());
        while !safe.is_char_boundary(cut) {
            cut -= 1;
        }
        safe.truncate(cut);
        let safe_trimmed = safe.trim_end_matches(['-', ',']).to_string();
        safe = format!("{safe_trimmed}-{:08x}", fnv1a(&set.join("\n")) as u32);
    }
    Ok(format!("{model}--{safe}"))
}

/// `clients.rate_per_s=10000` → `rate_per_s=10000`; `nodes.A.weight=5` →
/// `A.weight=5`; `faults[0].at=2s` → `faults0.at=2s`.
fn short_override(arg: &str) -> String {
    let (path, value) = arg.split_once('=').unwrap_or((arg, ""));
    let segs: Vec<&str> = path
        .split(['.', '[', ']'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let short = match segs.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [.., list, item, last] if item.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{list}{item}.{last}")
        }
        [_, parent, last] if !parent.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{parent}.{last}")
        }
        [.., last] => last.to_string(),
    };
    format!("{short}={}", value.trim())
}

/// Keeps `[A-Za-z0-9._=+,-]`; every other run of characters becomes one `-`.
fn sanitize(s: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "._=+,-".contains(c) {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_matches('-').to_string()
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

/// 64-bit FNV-1a: a stable hash (the same on every machine and version).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(set: &[&str]) -> String {
        let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
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
        let set = vec!["clients.rate_per_s=1".to_string()];
        assert_eq!(run_dir_name("m", &set, Some("fast")).unwrap(), "fast");
        assert!(run_dir_name("m", &set, Some("a/b")).is_err());
        assert!(run_dir_name("m", &set, Some("..")).is_err());
        assert!(run_dir_name("m", &set, Some("")).is_err());
    }
}
