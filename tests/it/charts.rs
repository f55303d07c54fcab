//! The charts as a reviewer reads them: words and units instead of internal
//! names, every sweep point drawn, the client's story on the timeline, the
//! provenance in every footer, report.md beside report.html, and the
//! gallery of docs/charts.md current.

use crate::report::{chart_files, check_in_chromium, check_png};
use crate::{hcsim, root, tmp};
use std::path::{Path, PathBuf};

/// The fill of the footer's text (`plot::FOOTER`): provenance, which names
/// `--set` paths on purpose.
const FOOTER_FILL: &str = "fill=\"#616161\"";

/// The text elements of an SVG, without the footer's.
fn svg_texts(svg: &str) -> Vec<String> {
    let mut out = vec![];
    for part in svg.split("<text").skip(1) {
        let (attrs, rest) = part.split_once('>').unwrap_or(("", ""));
        if attrs.contains(FOOTER_FILL) {
            continue;
        }
        let text = rest.split("</text>").next().unwrap_or("");
        out.push(
            text.trim()
                .replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'"),
        );
    }
    out
}

/// The footer lines of an SVG.
fn svg_footer(svg: &str) -> String {
    svg.split("<text")
        .skip(1)
        .filter(|p| p.split('>').next().unwrap_or("").contains(FOOTER_FILL))
        .map(|p| p.split_once('>').map_or("", |x| x.1))
        .map(|t| t.split("</text>").next().unwrap_or("").trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// An internal name in `text`: a dotted path (`nodes.A.share`,
/// `policy.max_fails`, `faults[0].p`) or a unit suffix (`ejected_time_s`).
fn internal_name(text: &str) -> Option<String> {
    for word in text.split(|c: char| c.is_whitespace() || "(),:;=/".contains(c)) {
        let bytes = word.as_bytes();
        let dotted = bytes.windows(3).any(|w| {
            (w[0].is_ascii_alphabetic() || w[0] == b'_' || w[0] == b']')
                && w[1] == b'.'
                && (w[2].is_ascii_alphabetic() || w[2] == b'_')
        });
        let suffix = word.ends_with("_s") || word.ends_with("_ms");
        if dotted || suffix {
            return Some(word.to_string());
        }
    }
    None
}

/// Every SVG under `dir/charts` with the internal names of its titles, axes and legends.
fn internal_names_in(dir: &Path) -> Vec<String> {
    let mut bad = vec![];
    for f in chart_files(dir) {
        if f.extension().is_none_or(|e| e != "svg") {
            continue;
        }
        let svg = std::fs::read_to_string(&f).unwrap();
        for t in svg_texts(&svg) {
            if let Some(w) = internal_name(&t) {
                bad.push(format!("{}: `{w}` in \"{t}\"", f.display()));
            }
        }
    }
    bad
}

/// A duration in seconds from a model file's `"10s"`, `"500ms"`, `"2m"`.
fn seconds(s: &str) -> f64 {
    hcsim::engine::time::parse_duration(s).map_or(0.0, |d| d.as_secs_f64())
}

/// A shorter run of `model` that keeps its faults: up to 5 s after the last
/// fault starts.
fn short_duration(model: &Path) -> Option<String> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model).ok()?).ok()?;
    let duration = seconds(doc["duration"].as_str()?);
    let last_fault = doc["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["at"].as_str().map(seconds))
        .fold(0.0, f64::max);
    let short = (last_fault + 5.0).ceil();
    (short < duration).then(|| format!("duration={short}s"))
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn ok(o: std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `args` for each item on two threads (the machine has two cores).
fn on_two_threads<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(item) = items.get(i) else { break };
                    f(item);
                }
            });
        }
    });
}

#[test]
fn no_chart_of_a_shipped_model_or_sweep_shows_an_internal_name() {
    let dir = tmp("vocabulary-walk");
    let bad = std::sync::Mutex::new(vec![]);
    let models = crate::shipped_models();
    on_two_threads(&models, |m| {
        let name = m.file_stem().unwrap().to_string_lossy().to_string();
        let out = dir.join(&name);
        let mut args = vec![
            "run".to_string(),
            m.to_string_lossy().to_string(),
            "--reps".into(),
            "2".into(),
            "--jobs".into(),
            "1".into(),
            "--quiet".into(),
            "--out".into(),
            out.to_string_lossy().to_string(),
        ];
        if let Some(d) = short_duration(m) {
            args.extend(["--set".into(), d]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(hcsim(&args), &name);
        bad.lock().unwrap().extend(internal_names_in(&out));
    });
    // Tune files (`tune-*.json`) are not sweeps; `hcsim tune` draws their frontier.
    let sweeps: Vec<PathBuf> = files("sweeps", "json")
        .into_iter()
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tune-")
        })
        .collect();
    on_two_threads(&sweeps, |s| {
        let name = s.file_stem().unwrap().to_string_lossy().to_string();
        let out = dir.join(format!("sweep-{name}"));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(s).unwrap()).unwrap();
        let model = s.parent().unwrap().join(doc["model"].as_str().unwrap());
        let mut args = vec![
            "sweep".to_string(),
            s.to_string_lossy().to_string(),
            "--reps".into(),
            "2".into(),
            "--jobs".into(),
            "1".into(),
            "--quiet".into(),
            "--out".into(),
            out.to_string_lossy().to_string(),
        ];
        if let Some(d) = short_duration(&model) {
            args.extend(["--set".into(), d]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(hcsim(&args), &name);
        assert!(
            !chart_files(&out).is_empty(),
            "{name} drew no chart in {}",
            out.display()
        );
        bad.lock().unwrap().extend(internal_names_in(&out));
    });
    let bad = bad.into_inner().unwrap();
    assert!(
        bad.is_empty(),
        "{} internal names in chart text, e.g.:\n{}",
        bad.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn internal_names_are_recognised() {
    for s in [
        "median of nodes.A.first_ejection_delay_s",
        "policy.max_fails",
        "faults[0].p",
        "ejected_time_s (s)",
        "latency_ms",
    ] {
        assert!(internal_name(s).is_some(), "{s}");
    }
    for s in [
        "Node A: time until ejected (ms)",
        "p99.9 latency",
        "0.5",
        "max_fails",
        "consecutive_5xx",
        "e2-p02-flaky-2pct",
    ] {
        assert!(internal_name(s).is_none(), "{s}");
    }
}

/// The issue's acceptance: a hang at 10,000 requests/s shows the client's
/// latency, and the chart says which override made it.
#[test]
fn a_what_if_timeline_has_a_latency_panel_and_names_its_override() {
    let dir = tmp("charts-hang-10k");
    ok(
        hcsim(&[
            "run",
            "models/hang-max-fails.json",
            "--set",
            "clients.rate_per_s=10000",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]),
        "hang at 10k",
    );
    let svg = std::fs::read_to_string(dir.join("charts/timeline.svg")).unwrap();
    let texts = svg_texts(&svg).join("\n");
    for part in [
        "client latency per bucket",
        "latency (ms)",
        "latency p99",
        "latency p50",
        "share (%)",
        "time (s)",
        "ejected by health checks",
        "client errors and timeouts per bucket",
        "fault: a (hang)",
    ] {
        assert!(texts.contains(part), "timeline lacks {part:?}:\n{texts}");
    }
    let footer = svg_footer(&svg);
    for part in [
        "model hang-max-fails",
        "seed 1",
        "1 run",
        "clients.rate_per_s=10000",
    ] {
        assert!(footer.contains(part), "footer lacks {part:?}: {footer}");
    }
    check_png(&dir.join("charts/timeline.png"));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("](charts/timeline.png)") && md.contains("clients.rate_per_s=10000"));
}

/// `hcsim compare` draws in the same words: names and units, not metric
/// paths; the overrides of each run in the footer.
#[test]
fn compare_charts_speak_the_vocabulary() {
    let dir = tmp("charts-compare");
    let (a, b, out) = (dir.join("a"), dir.join("b"), dir.join("vs"));
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "run",
            "models/e2-p02-flaky-2pct.json",
            "--reps",
            "3",
            "--set",
            "duration=20s",
            "--quiet",
            "--no-charts",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        ok(hcsim(&args), "run");
    };
    run(&a, &[]);
    run(&b, &["--set", "clients.rate_per_s=300"]);
    ok(
        hcsim(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]),
        "compare",
    );
    let bad = internal_names_in(&out);
    assert!(bad.is_empty(), "internal names:\n{}", bad.join("\n"));
    let mut texts = vec![];
    let mut footers = vec![];
    for f in chart_files(&out) {
        if f.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&f).unwrap();
            texts.extend(svg_texts(&svg));
            footers.push(svg_footer(&svg));
        } else {
            check_png(&f);
        }
    }
    assert!(footers.len() >= 4, "{footers:?}");
    assert!(
        footers.iter().all(|f| f.contains("clients.rate_per_s=300")),
        "{footers:?}"
    );
    for want in [
        "traffic share (%)",
        "p99 latency (ms)",
        "Clients: p99 latency per bucket",
        "time (s)",
    ] {
        assert!(texts.iter().any(|t| t == want), "no {want:?} in {texts:?}");
    }
    let html = std::fs::read_to_string(out.join("compare.html")).unwrap();
    assert!(html.contains("Clients: p99 latency") && !html.contains(">client.latency_ms.p99<"));
}

/// A zipped axis is one axis: every cell of the E5 grid has a value.
#[test]
fn a_zipped_axis_fills_every_cell() {
    let dir = tmp("charts-e5");
    ok(
        hcsim(&[
            "sweep",
            "sweeps/timeouts-e5.json",
            "--reps",
            "2",
            "--set",
            "duration=30s",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]),
        "e5",
    );
    let svg = std::fs::read_to_string(dir.join("charts/heatmap-client-timeouts.svg")).unwrap();
    let texts = svg_texts(&svg);
    assert!(
        !texts.iter().any(|t| t == "\u{2013}"),
        "blank cells: {texts:?}"
    );
    for v in ["500ms", "1s", "2s", "5s", "10s", "30s", "60s"] {
        let tuple = format!("{v} / {v}");
        assert!(texts.contains(&tuple), "no column {tuple}: {texts:?}");
    }
    assert!(texts.contains(&"proxy_connect_timeout / proxy_read_timeout".to_string()));
    assert!(texts.contains(&"client timeout".to_string()));
    // 7 × 7 numbers in the cells (plus the colour bar's ticks).
    let numbers = texts.iter().filter(|t| t.parse::<f64>().is_ok()).count();
    assert!(numbers >= 49, "{numbers} numbers: {texts:?}");
}

/// Three axes: the heatmap of E6 is drawn for the crash and for the hang,
/// the distribution shows all 8 points, and the report lists every chart.
#[test]
fn a_sweep_of_three_axes_draws_every_slice() {
    let dir = tmp("charts-e6");
    ok(
        hcsim(&[
            "sweep",
            "sweeps/e6-probe-interval-threshold.json",
            "--reps",
            "3",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]),
        "e6",
    );
    let stem = "heatmap-nodes-A-first_ejection_delay_s";
    for kind in ["crash", "hang"] {
        let svg = std::fs::read_to_string(dir.join(format!("charts/{stem}--fault-{kind}.svg")))
            .unwrap_or_else(|e| panic!("no {kind} slice: {e}"));
        let texts = svg_texts(&svg);
        assert!(
            texts.iter().any(|t| t.contains(&format!("fault: {kind}"))),
            "{texts:?}"
        );
        assert!(
            texts
                .iter()
                .any(|t| t == "time until ejected (s)" || t == "time until ejected (ms)")
        );
        assert!(
            svg.contains("linearGradient"),
            "the colour bar is a gradient"
        );
        let strips = svg.matches("height=\"1\"").count();
        assert!(
            strips < 20,
            "{strips} one-pixel strips: a striped colour bar"
        );
    }
    let dist =
        std::fs::read_to_string(dir.join("charts/distribution-nodes-A-first_ejection_delay_s.svg"))
            .unwrap();
    let texts = svg_texts(&dist);
    for cluster in [
        "fault: crash, interval: 500ms",
        "fault: crash, interval: 1s",
        "fault: hang, interval: 500ms",
        "fault: hang, interval: 1s",
    ] {
        assert!(texts.contains(&cluster.to_string()), "{cluster}: {texts:?}");
    }
    assert!(!texts.iter().any(|t| t.starts_with("n = ")), "{texts:?}");
    assert!(svg_footer(&dist).contains("3 samples per box"));
    let pngs: Vec<PathBuf> = chart_files(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert_eq!(pngs.len(), 3, "{pngs:?}");
    for p in &pngs {
        check_png(p);
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for p in &pngs {
        let name = p.file_name().unwrap().to_string_lossy();
        assert!(
            md.contains(&format!("](charts/{name})")),
            "report.md lacks {name}"
        );
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("fault: crash") && html.contains("fault: hang"));
    assert!(
        html.contains("Node A: time until ejected (s)"),
        "key table header"
    );
    assert!(html.contains("white-space:pre-wrap"), "wrapped JSON");
    check_in_chromium(&dir, 3);
}

/// Every chart type of a run: the median timeline, one replication's,
/// box plots and a CDF, with units on their axes and integers for counts.
#[test]
fn every_run_chart_type_renders_with_units() {
    let dir = tmp("charts-run-types");
    let charts = r#"charts=[{"kind": "timeline"}, {"kind": "timeline", "rep": 1, "bucket": "2s"},
        {"kind": "distribution", "metric": "share"},
        {"kind": "distribution", "metric": "ejections"},
        {"kind": "distribution", "metric": "client.latency_ms.p99", "style": "cdf"}]"#;
    ok(
        hcsim(&[
            "run",
            "models/e2-p02-flaky-2pct.json",
            "--reps",
            "4",
            "--set",
            charts,
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]),
        "e2",
    );
    let read = |stem: &str| {
        check_png(&dir.join(format!("charts/{stem}.png")));
        let svg = std::fs::read_to_string(dir.join(format!("charts/{stem}.svg"))).unwrap();
        (svg_texts(&svg), svg_footer(&svg))
    };
    let (median, footer) = read("timeline");
    assert!(median.iter().any(|t| t.contains("median of 4 runs")));
    assert!(median.contains(&"min–max of 4 runs".to_string()));
    assert!(footer.contains("4 runs") && footer.contains("buckets of 1 s"));
    // The ejection shading of several runs has its scale.
    let key = median
        .iter()
        .position(|t| t == "shading: fraction of the bucket ejected, mean over runs");
    let key = key.unwrap_or_else(|| panic!("no scale of the ejection shading: {median:?}"));
    assert_eq!(median[key + 1..key + 3], ["0%", "100%"], "{median:?}");
    let (one, footer) = read("timeline-rep1");
    assert!(one.iter().any(|t| t.contains("replication 1")));
    assert!(footer.contains("buckets of 2 s"), "{footer}");
    assert!(one.contains(&"requests per 2 s".to_string()), "{one:?}");
    assert!(
        !one.iter().any(|t| t.starts_with("shading:")),
        "one run's exact bars need no scale: {one:?}"
    );
    let (share, _) = read("distribution-share");
    assert!(
        share.contains(&"traffic share (%)".to_string()),
        "{share:?}"
    );
    let (ejections, _) = read("distribution-ejections");
    assert!(ejections.contains(&"ejections".to_string()));
    let ticks: Vec<&String> = ejections
        .iter()
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    assert!(
        ticks.iter().all(|t| !t.contains('.')),
        "counts with fractional ticks: {ticks:?}"
    );
    let (cdf, _) = read("distribution-client-latency_ms-p99");
    assert!(cdf.contains(&"p99 latency (ms)".to_string()), "{cdf:?}");
}

/// docs/charts.md shows what `scripts/gallery.sh` draws: the same files with
/// the same titles, each a real picture.
#[test]
fn the_gallery_is_current() {
    let dir = tmp("gallery");
    let o = std::process::Command::new("bash")
        .arg("scripts/gallery.sh")
        .arg(&dir)
        .env("HCSIM", env!("CARGO_BIN_EXE_hcsim"))
        .current_dir(root())
        .output()
        .expect("run scripts/gallery.sh");
    ok(o, "scripts/gallery.sh");
    let fresh = std::fs::read_to_string(dir.join("gallery.txt")).unwrap();
    let shipped = std::fs::read_to_string(root().join("docs/img/gallery.txt")).unwrap();
    assert_eq!(
        fresh, shipped,
        "docs/img is stale: run scripts/gallery.sh and commit docs/img"
    );
    let doc = std::fs::read_to_string(root().join("docs/charts.md")).unwrap();
    for line in shipped.lines() {
        let file = line.split(':').next().unwrap();
        assert!(
            doc.contains(&format!("(img/{file})")),
            "docs/charts.md does not show {file}"
        );
        check_png(&root().join("docs/img").join(file));
        check_png(&dir.join(file));
    }
}

/// The review above, on what a user runs first: an imported config, whose
/// nodes are named `IP:port`. Its sweep and its compare draw charts whose
/// titles name each node whole (never `Node 10: …`), whose text shows no
/// internal name, and whose file names hold no `:`.
#[test]
fn an_imported_configs_sweep_and_compare_charts_name_their_nodes() {
    let dir = tmp("vocabulary-imported");
    let model = dir.join("shop.json");
    let o = hcsim(&[
        "import",
        "tests/configs/e3-nginx.conf",
        "--rps",
        "100",
        "--duration",
        "10s",
        "--set",
        r#"faults=[{"kind":"flaky","node":"10.0.0.1:8080","at":"1s","for":"3s","p":1.0,"status":503}]"#,
        "-o",
        model.to_str().unwrap(),
    ]);
    ok(o, "import");
    let m = model.to_str().unwrap();
    let sweep = dir.join("sweep");
    ok(
        hcsim(&[
            "sweep",
            m,
            "--param",
            "policy.max_fails=1,3",
            "--param",
            "policy.fail_timeout=2s,5s",
            "--reps",
            "2",
            "--jobs",
            "1",
            "--quiet",
            "--out",
            sweep.to_str().unwrap(),
        ]),
        "sweep",
    );
    let (a, b) = (dir.join("a"), dir.join("b"));
    for (out, set) in [(&a, "policy.max_fails=1"), (&b, "policy.max_fails=3")] {
        ok(
            hcsim(&[
                "run",
                m,
                "--set",
                set,
                "--reps",
                "2",
                "--jobs",
                "1",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ]),
            "run",
        );
    }
    let compare = dir.join("compare");
    ok(
        hcsim(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            compare.to_str().unwrap(),
        ]),
        "compare",
    );
    let mut bad = vec![];
    for out in [&sweep, &compare] {
        let charts = chart_files(out);
        assert!(!charts.is_empty(), "no chart in {}", out.display());
        let mut named = false;
        for f in charts {
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            assert!(
                !name.contains(':'),
                "a chart file name holds ':': {}",
                f.display()
            );
            if f.extension().is_some_and(|e| e == "svg") {
                let svg = std::fs::read_to_string(&f).unwrap();
                for t in svg_texts(&svg) {
                    assert!(!t.contains("Node 10:"), "{}: \"{t}\"", f.display());
                    named |= t.contains("Node 10.0.0.1:8080");
                }
            }
        }
        assert!(
            named,
            "no chart of {} names node 10.0.0.1:8080",
            out.display()
        );
        bad.extend(internal_names_in(out));
    }
    assert!(bad.is_empty(), "internal names in chart text: {bad:#?}");
}

/// The column of `points.csv` named `column`, one cell per point.
/// Writes `sweep` into `dir`, runs it quietly and returns its output directory.
fn run_sweep(dir: &Path, sweep: &serde_json::Value) -> PathBuf {
    let file = dir.join("sweep.json");
    std::fs::write(&file, sweep.to_string()).unwrap();
    let out = dir.join("out");
    ok(
        hcsim(&[
            "sweep",
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]),
        "sweep",
    );
    out
}

/// The SVG text of the chart in `out/charts` whose name starts with `prefix`.
fn chart_svg(out: &Path, prefix: &str) -> String {
    let svg = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(".svg")
        })
        .unwrap_or_else(|| panic!("no {prefix}*.svg in {}", out.display()));
    std::fs::read_to_string(&svg).unwrap()
}

fn points_column(dir: &Path, column: &str) -> Vec<String> {
    let csv = std::fs::read_to_string(dir.join("points.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = head
        .iter()
        .position(|h| *h == column)
        .unwrap_or_else(|| panic!("no column {column}: {head:?}"));
    lines
        .map(|l| l.split(',').nth(at).unwrap_or("").to_string())
        .collect()
}

/// A sweep over the fleet size from 1 replica: a single gateway is a fleet
/// of one, whose last replica to eject a node is its only one, so the chart
/// of the last replica's ejection has its point at 1 replica.
#[test]
fn the_fleet_chart_has_a_point_at_one_replica() {
    let dir = tmp("charts-fleet-one");
    let sweep = serde_json::json!({
        "name": "fleet-one",
        "model": root().join("models/fleet-ingress-crash.json"),
        "reps": 2,
        "axes": [{"path": "gateway.replicas", "values": [1, 2, 5]}],
        "charts": [{"kind": "lines", "metric": "nodes.A.last_ejection_delay_s",
                    "x": "gateway.replicas"}]
    });
    let out = run_sweep(&dir, &sweep);
    let last = points_column(&out, "nodes.A.last_ejection_delay_s.median");
    let first = points_column(&out, "nodes.A.first_ejection_delay_s.median");
    assert_eq!(last.len(), 3, "{last:?}");
    assert!(last.iter().all(|v| v.parse::<f64>().is_ok()), "{last:?}");
    assert_eq!(
        last[0], first[0],
        "one gateway: its first ejection is its last"
    );
    let texts = svg_texts(&chart_svg(&out, "lines-"));
    assert!(
        texts.iter().any(|t| t == "1"),
        "no tick at 1 replica: {texts:?}"
    );
}

/// A heatmap cell where the event never happened (a node never ejected)
/// shows a dash, and the chart's note says what the dash means.
#[test]
fn a_heatmap_explains_its_dash() {
    let dir = tmp("charts-heatmap-dash");
    let sweep = serde_json::json!({
        "name": "never-ejected",
        "model": root().join("models/e2-p02-flaky-2pct.json"),
        "reps": 1,
        "axes": [{"path": "policy.max_fails", "values": [1, 1000]},
                 {"path": "policy.fail_timeout", "values": ["5s", "10s"]}],
        "charts": [{"kind": "heatmap", "metric": "nodes.A.first_ejection_delay_s",
                    "x": "policy.max_fails", "y": "policy.fail_timeout"}]
    });
    let svg = chart_svg(&run_sweep(&dir, &sweep), "heatmap-");
    let texts = svg_texts(&svg);
    assert_eq!(
        texts.iter().filter(|t| *t == "\u{2013}").count(),
        2,
        "max_fails=1000 never ejects: {texts:?}"
    );
    let footer = svg_footer(&svg);
    assert!(
        footer.contains("– : it never happened in any run of the cell"),
        "{footer}"
    );
}
