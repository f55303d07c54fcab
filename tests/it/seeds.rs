//! The seed experiments, reproduced: every figure within its acceptance band.

use crate::root;

#[test]
fn every_seed_figure_is_within_its_band() {
    let rows = hcsim::reproduce::rows(&hcsim::reproduce::Models::Dir(root().join("models")))
        .expect("shipped models load");
    assert!(
        rows.len() >= 30,
        "expected the E1–E5 rows, got {}",
        rows.len()
    );
    let outside: Vec<_> = rows.iter().filter(|r| r.is_outside()).collect();
    assert!(outside.is_empty(), "outside their band: {outside:#?}");
}

/// docs/seed-comparison.md is what `hcsim reproduce --markdown` prints.
/// Regenerate on purpose with `scripts/seed-table.sh` (or HCSIM_BLESS=1).
#[test]
fn seed_comparison_doc_is_current() {
    let rows = hcsim::reproduce::rows(&hcsim::reproduce::Models::Dir(root().join("models")))
        .expect("shipped models load");
    let table = hcsim::reproduce::markdown(&rows);
    let path = root().join("docs/seed-comparison.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let start = "<!-- table:start -->\n";
    let end = "<!-- table:end -->";
    let (Some(a), Some(b)) = (doc.find(start), doc.find(end)) else {
        panic!("{} lacks the table markers", path.display());
    };
    let current = &doc[a + start.len()..b];
    if current != table {
        if std::env::var_os("HCSIM_BLESS").is_some() {
            let new = format!("{}{}{}", &doc[..a + start.len()], table, &doc[b..]);
            std::fs::write(&path, new).expect("write doc");
        } else {
            panic!("docs/seed-comparison.md is stale: run scripts/seed-table.sh");
        }
    }
}
