//! Charts and report.html: every chart decodes and is not blank, `hcsim plot`
//! redraws the same files, and the report renders in headless Chromium.

use crate::{hcsim, tmp};
use std::path::Path;
use std::process::Command;

/// Decodes a PNG and checks it is a real picture (several colours, dark text).
pub fn check_png(path: &Path) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("frame");
    assert!(
        info.width >= 600 && info.height >= 400,
        "{}: {}x{}",
        path.display(),
        info.width,
        info.height
    );
    let px = &buf[..info.buffer_size()];
    let step = info.color_type.samples();
    let dark = px
        .chunks(step)
        .filter(|p| p[..3].iter().all(|&c| c < 80))
        .count();
    let distinct: std::collections::BTreeSet<&[u8]> = px.chunks(step).take(200_000).collect();
    assert!(
        dark > 500,
        "{}: only {dark} dark pixels (no text?)",
        path.display()
    );
    assert!(distinct.len() > 8, "{}: nearly flat image", path.display());
}

fn run_e2(dir: &Path) {
    let o = hcsim(&[
        "run",
        "models/e2-p02-flaky-2pct.json",
        "--reps",
        "5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

pub fn chart_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("charts"))
        .expect("charts dir")
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The PNGs among `files`; each must decode as a real picture.
fn checked_pngs(files: &[std::path::PathBuf]) -> Vec<&std::path::PathBuf> {
    let pngs: Vec<_> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    for p in &pngs {
        check_png(p);
    }
    pngs
}

/// Deletes the charts, redraws them with `hcsim plot` and checks the bytes match.
fn assert_plot_redraws(dir: &Path, files: &[std::path::PathBuf]) {
    let before: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    std::fs::remove_dir_all(dir.join("charts")).unwrap();
    let o = hcsim(&["plot", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after: Vec<Vec<u8>> = chart_files(dir)
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(
        before == after,
        "hcsim plot drew different charts in {}",
        dir.display()
    );
}

#[test]
fn run_draws_charts_that_decode_and_plot_redraws_them_identically() {
    let dir = tmp("charts");
    run_e2(&dir);
    let files = chart_files(&dir);
    let pngs = checked_pngs(&files);
    assert!(pngs.len() >= 3, "timeline + distributions: {files:?}");
    for p in &pngs {
        let svg = std::fs::read_to_string(p.with_extension("svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("e2-p02-flaky-2pct"));
    }
    let report_before = std::fs::read(dir.join("report.html")).unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    assert_plot_redraws(&dir, &files);
    assert!(std::fs::read(dir.join("report.html")).unwrap() == report_before);
}

#[test]
fn report_is_self_contained() {
    let dir = tmp("report-html");
    run_e2(&dir);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.matches("<figure><svg").count() >= 3);
    for external in ["src=\"http", "href=\"http", "<link", "@import", "<img"] {
        assert!(!html.contains(external), "external asset: {external}");
    }
    for part in [
        "Key figures",
        "What was simulated",
        "Provenance",
        "&quot;fail_timeout&quot;: &quot;5s&quot;",
        "hcsim run models/e2-p02-flaky-2pct.json --seed 1 --reps 5",
    ] {
        assert!(html.contains(part), "report lacks {part}");
    }
}

pub fn chromium() -> Option<String> {
    ["chromium", "chromium-browser"].iter().find_map(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| c.to_string())
    })
}

/// Loads a report in headless Chromium: no script errors, `charts` charts
/// rendered non-empty, and a screenshot that decodes.
pub fn check_in_chromium(dir: &Path, charts: usize) {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("HCSIM_REQUIRE_TOOLS").is_none(),
            "HCSIM_REQUIRE_TOOLS is set but chromium is not installed"
        );
        eprintln!("skipped: chromium not installed (scripts/test-deps.sh installs it)");
        return;
    };
    let url = format!("file://{}", dir.join("report.html").display());
    let base = |profile: &str| {
        let mut c = Command::new(&browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
        ]);
        c.arg(format!("--user-data-dir={}", dir.join(profile).display()));
        c
    };
    let dom = base("p1")
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&dom.stdout);
    let body = dom
        .split("<body")
        .nth(1)
        .and_then(|b| b.split('>').next())
        .unwrap_or("");
    assert!(
        !body.contains("data-errors"),
        "script errors on the page: {body}"
    );
    assert!(
        body.contains(&format!("data-charts=\"{charts}\"")),
        "charts counted: {body}"
    );
    assert!(
        body.contains(&format!("data-charts-ok=\"{charts}\"")),
        "charts rendered non-empty: {body}"
    );
    let shot = dir.join("report.png");
    let o = base("p2")
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1300,2400")
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    check_png(&shot);
}

#[test]
fn report_renders_in_headless_chromium() {
    let dir = tmp("chromium");
    run_e2(&dir);
    check_in_chromium(&dir, 3);
}

#[test]
fn a_shipped_sweep_draws_its_charts_and_report() {
    let dir = tmp("sweep-charts");
    let o = hcsim(&[
        "sweep",
        "sweeps/policy-vs-failure-rate-100rps.json",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = chart_files(&dir);
    let pngs = checked_pngs(&files);
    assert_eq!(pngs.len(), 3, "the three charts the sweep names: {files:?}");
    assert_plot_redraws(&dir, &files);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("Key table") && html.contains("ratio_ejection"));
    check_in_chromium(&dir, 3);
}
