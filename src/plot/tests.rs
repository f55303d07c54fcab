//! Render tests: every chart kind writes a decodable PNG with visible text and a matching SVG.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

type TestResult = Result<(), Box<dyn Error>>;

/// A fresh, empty directory under the system temp dir, unique per test and process.
fn temp_dir(name: &str) -> Result<PathBuf, Box<dyn Error>> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!(
        "hcsim_plot_test_{}_{}_{n}",
        std::process::id(),
        name
    ));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

struct Decoded {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Decoded {
    fn pixel(&self, x: u32, y: u32) -> (u8, u8, u8) {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        (self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
    }
}

fn decode_png(path: &Path) -> Result<Decoded, Box<dyn Error>> {
    let decoder = png::Decoder::new(std::fs::File::open(path)?);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf)?;
    assert_eq!(info.color_type, png::ColorType::Rgb, "{}", path.display());
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    Ok(Decoded {
        width: info.width,
        height: info.height,
        rgb: buf,
    })
}

/// Checks both outputs of one chart.
fn check_outputs(stem: &Path, size: (u32, u32), title: &str) -> TestResult {
    let png_path = stem.with_extension("png");
    let img = decode_png(&png_path)?;
    assert_eq!((img.width, img.height), size, "{}", png_path.display());

    // Not a flat image.
    let first = img.pixel(0, 0);
    let differing = img
        .rgb
        .chunks(3)
        .filter(|p| (p[0], p[1], p[2]) != first)
        .count();
    assert!(
        differing > (size.0 * size.1 / 50) as usize,
        "{} is (nearly) one flat colour",
        png_path.display()
    );

    // Dark anti-aliased title glyph pixels in the top band, middle half of the width.
    let band_h = size.1 * 60 / 800;
    let mut dark = 0;
    for y in 0..band_h {
        for x in size.0 / 4..size.0 * 3 / 4 {
            let (r, g, b) = img.pixel(x, y);
            if u32::from(r) + u32::from(g) + u32::from(b) < 3 * 100 {
                dark += 1;
            }
        }
    }
    assert!(
        dark > 100,
        "{}: only {dark} dark pixels in the title area",
        png_path.display()
    );

    let svg = std::fs::read_to_string(stem.with_extension("svg"))?;
    assert!(svg.contains("<svg"), "no <svg element");
    assert!(svg.contains(title), "svg lacks the title {title:?}");
    assert!(
        svg.contains("sans-serif"),
        "svg lacks a font-family fallback"
    );
    assert!(svg.trim_end().ends_with("</svg>"), "svg is not closed");
    Ok(())
}

const CAPTION: &str = "model e2-p02 · seed 7 · 20 reps";

fn sample_heatmap() -> HeatmapSpec {
    HeatmapSpec {
        title: "Heatmap title".into(),
        caption: CAPTION.into(),
        x_label: "interval (s)".into(),
        y_label: "threshold (checks)".into(),
        value_label: "error rate (%)".into(),
        x: vec!["1".into(), "2".into(), "5".into()],
        y: vec!["a".into(), "b".into()],
        cells: vec![
            vec![Some(0.1), Some(2.5), None],
            vec![Some(30.0), Some(f64::NAN)],
        ],
        ..HeatmapSpec::default()
    }
}

fn sample_lines(categorical: bool) -> LinesSpec {
    let series = (0..3)
        .map(|k| Series {
            name: format!("policy {k}"),
            points: (0..6)
                .map(|i| {
                    let m = i as f64 * (k + 1) as f64;
                    if categorical {
                        Point::new(format!("case {i}"), m, m - 1.0, m + 1.0)
                    } else {
                        Point::new(i as f64 * 2.5, m, m - 1.0, m + 1.0)
                    }
                })
                .collect(),
        })
        .collect();
    LinesSpec {
        title: "Lines title".into(),
        caption: CAPTION.into(),
        x_label: "interval (s)".into(),
        y_label: "latency (ms)".into(),
        series,
        y_from_zero: true,
        ..LinesSpec::default()
    }
}

fn sample_timeline() -> TimelineSpec {
    let t: Vec<f64> = (0..60).map(f64::from).collect();
    let nodes = (0..3)
        .map(|k| NodeTrack {
            name: format!("node-{k}"),
            share: t
                .iter()
                .map(|x| (*x != 50.0).then_some(1.0 / 3.0))
                .collect(),
            share_band: t.iter().map(|_| Some((0.3, 0.36))).collect(),
            ejections: if k == 1 { vec![(20.0, 35.0)] } else { vec![] },
            ejected: vec![],
            faults: if k == 1 {
                vec![(15.0, 30.0, "blackhole".into())]
            } else {
                vec![]
            },
        })
        .collect();
    TimelineSpec {
        title: "Timeline title".into(),
        caption: CAPTION.into(),
        bucket_s: 1.0,
        errors: t
            .iter()
            .map(|x| f64::from(u8::from((15.0..20.0).contains(x)) * 9))
            .collect(),
        timeouts: t
            .iter()
            .map(|x| f64::from(u8::from((15.0..21.0).contains(x)) * 4))
            .collect(),
        latency_p50_ms: t.iter().map(|_| Some(5.0)).collect(),
        latency_p99_ms: t
            .iter()
            .map(|x| match x {
                x if (15.0..21.0).contains(x) => Some(1000.0),
                x if *x == 40.0 => None,
                _ => Some(9.0),
            })
            .collect(),
        latency_p99_band: t.iter().map(|_| Some((8.0, 12.0))).collect(),
        client_timeout_ms: Some(1000.0),
        band_label: "min–max of 5 runs".into(),
        t,
        nodes,
        ..TimelineSpec::default()
    }
}

fn sample_distribution() -> DistributionSpec {
    DistributionSpec {
        title: "Distribution title".into(),
        caption: CAPTION.into(),
        group_label: "policy".into(),
        value_label: "time to eject (s)".into(),
        groups: (0..4)
            .map(|g| {
                let v = (0..25).map(|i| f64::from(g * 3 + (i * 7) % 11)).collect();
                (format!("group {g}"), v)
            })
            .collect(),
        clusters: vec![("first two".into(), 2), ("last two".into(), 2)],
        ..DistributionSpec::default()
    }
}

#[test]
fn heatmap_renders() -> TestResult {
    let dir = temp_dir("heatmap")?;
    let stem = dir.join("heatmap");
    heatmap(&sample_heatmap(), &stem)?;
    check_outputs(&stem, DEFAULT_SIZE, "Heatmap title")?;
    let svg = std::fs::read_to_string(stem.with_extension("svg"))?;
    assert!(
        svg.contains("2.50"),
        "cell value printed with 3 significant digits"
    );
    assert!(svg.contains('\u{2013}'), "missing cell shown as an en dash");
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn lines_render_numeric_and_categorical() -> TestResult {
    let dir = temp_dir("lines")?;
    for (name, categorical) in [("numeric", false), ("categorical", true)] {
        let stem = dir.join(name);
        lines(&sample_lines(categorical), &stem)?;
        check_outputs(&stem, DEFAULT_SIZE, "Lines title")?;
        let svg = std::fs::read_to_string(stem.with_extension("svg"))?;
        assert!(svg.contains("policy 2"), "legend lists the series");
        if categorical {
            assert!(svg.contains("case 5"), "category names on the x axis");
        }
    }
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn timeline_renders() -> TestResult {
    let dir = temp_dir("timeline")?;
    let stem = dir.join("timeline");
    timeline(&sample_timeline(), &stem)?;
    check_outputs(&stem, DEFAULT_SIZE, "Timeline title")?;
    let svg = std::fs::read_to_string(stem.with_extension("svg"))?;
    assert!(svg.contains("fault: node-1 (blackhole)"));
    assert!(svg.contains("time (s)"));
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn distribution_renders_box_and_cdf() -> TestResult {
    let dir = temp_dir("distribution")?;
    let stem = dir.join("box");
    distribution(&sample_distribution(), &stem)?;
    check_outputs(&stem, DEFAULT_SIZE, "Distribution title")?;
    let stem = dir.join("cdf");
    distribution_cdf(&sample_distribution(), &stem)?;
    check_outputs(&stem, DEFAULT_SIZE, "Distribution title")?;
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn custom_size_is_respected() -> TestResult {
    let dir = temp_dir("size")?;
    let stem = dir.join("small");
    let spec = LinesSpec {
        size: Some((600, 400)),
        ..sample_lines(false)
    };
    lines(&spec, &stem)?;
    check_outputs(&stem, (600, 400), "Lines title")?;
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn stem_with_dot_keeps_its_name() -> TestResult {
    let dir = temp_dir("dots")?;
    heatmap(&sample_heatmap(), dir.join("p0.5"))?;
    assert!(dir.join("p0.5.png").is_file());
    assert!(dir.join("p0.5.svg").is_file());
    Ok(std::fs::remove_dir_all(dir)?)
}

/// Empty, all-`None`, NaN, single-point and inconsistent inputs draw something and never panic.
#[test]
fn degenerate_inputs_do_not_panic() -> TestResult {
    let dir = temp_dir("edge")?;

    heatmap(&HeatmapSpec::default(), dir.join("heatmap_default"))?;
    let all_none = HeatmapSpec {
        title: "all none".into(),
        x: vec!["a".into(), "b".into()],
        y: vec!["c".into()],
        cells: vec![vec![None, None]],
        ..HeatmapSpec::default()
    };
    heatmap(&all_none, dir.join("heatmap_none"))?;
    let ragged = HeatmapSpec {
        title: "ragged".into(),
        x: vec!["a".into(), "b".into(), "c".into()],
        y: vec!["c".into(), "d".into(), "e".into()],
        cells: vec![
            vec![Some(1.0)],
            vec![],
            vec![Some(f64::INFINITY), Some(1.0), Some(1.0)],
        ],
        range: Some((f64::NAN, 0.0)),
        scale: AxisScale::Log,
        ..HeatmapSpec::default()
    };
    heatmap(&ragged, dir.join("heatmap_ragged"))?;

    lines(&LinesSpec::default(), dir.join("lines_default"))?;
    let odd_lines = LinesSpec {
        title: "odd".into(),
        series: vec![
            Series::default(),
            Series {
                name: "single".into(),
                points: vec![Point::new(3.0, 1.0, 0.5, 2.0)],
            },
            Series {
                name: "nan".into(),
                points: vec![
                    Point::new(f64::NAN, 1.0, 0.0, 2.0),
                    Point::new(1.0, f64::NAN, 0.0, 2.0),
                    Point::new(2.0, 1.0, f64::NAN, 2.0),
                    Point::new(4.0, 1.5, 1.0, 2.0),
                ],
            },
            Series {
                name: "mixed".into(),
                points: vec![Point::new("cat", 1.0, 1.0, 1.0)],
            },
        ],
        ..LinesSpec::default()
    };
    lines(&odd_lines, dir.join("lines_odd"))?;

    timeline(&TimelineSpec::default(), dir.join("timeline_default"))?;
    let odd_timeline = TimelineSpec {
        title: "odd".into(),
        bucket_s: f64::NAN,
        t: vec![0.0, 1.0, f64::NAN, 3.0],
        nodes: vec![
            NodeTrack {
                name: "short".into(),
                share: vec![Some(0.5), Some(f64::NAN), None],
                share_band: vec![Some((f64::NAN, 1.0))],
                ejections: vec![(2.0, 1.0), (f64::NAN, 3.0), (2.5, f64::INFINITY)],
                ejected: vec![f64::NAN, 2.0],
                faults: vec![(f64::NEG_INFINITY, 1.0, String::new())],
            },
            NodeTrack::default(),
        ],
        errors: vec![1.0, f64::NAN],
        timeouts: vec![],
        latency_p50_ms: vec![Some(0.0), Some(f64::NAN), None],
        latency_p99_ms: vec![Some(f64::INFINITY)],
        client_timeout_ms: Some(-1.0),
        ..TimelineSpec::default()
    };
    timeline(&odd_timeline, dir.join("timeline_odd"))?;
    let nodes_only = TimelineSpec {
        nodes: vec![NodeTrack {
            name: "x".into(),
            ejections: vec![(1.0, 2.0)],
            ..NodeTrack::default()
        }],
        ..TimelineSpec::default()
    };
    timeline(&nodes_only, dir.join("timeline_nodes_only"))?;

    distribution(&DistributionSpec::default(), dir.join("box_default"))?;
    distribution_cdf(&DistributionSpec::default(), dir.join("cdf_default"))?;
    let odd_dist = DistributionSpec {
        title: "odd".into(),
        groups: vec![
            ("empty".into(), vec![]),
            ("nan".into(), vec![f64::NAN, f64::INFINITY]),
            ("one".into(), vec![4.0]),
            ("same".into(), vec![2.0, 2.0, 2.0]),
        ],
        ..DistributionSpec::default()
    };
    distribution(&odd_dist, dir.join("box_odd"))?;
    distribution_cdf(&odd_dist, dir.join("cdf_odd"))?;

    // Every call produced both files with a decodable PNG.
    let mut pngs = 0;
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "png") {
            let img = decode_png(&path)?;
            assert_eq!((img.width, img.height), DEFAULT_SIZE);
            assert!(path.with_extension("svg").is_file());
            pngs += 1;
        }
    }
    assert_eq!(pngs, 12);
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn errors_name_the_path_and_cause() -> TestResult {
    let dir = temp_dir("errors")?;
    let blocker = dir.join("not_a_dir");
    std::fs::write(&blocker, b"x")?;
    let stem = blocker.join("chart");
    let err = match heatmap(&sample_heatmap(), &stem) {
        Err(e) => e,
        Ok(()) => panic!("writing below a regular file must fail"),
    };
    assert!(matches!(err, PlotError::Io { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("cannot write "), "{msg}");
    assert!(msg.contains("chart.png"), "{msg}");
    assert!(err.source().is_some());

    let bad_size = LinesSpec {
        size: Some((0, 100)),
        ..LinesSpec::default()
    };
    let err = match lines(&bad_size, dir.join("zero")) {
        Err(e) => e,
        Ok(()) => panic!("zero width must be rejected"),
    };
    assert!(matches!(err, PlotError::InvalidSize { .. }), "{err:?}");
    assert!(err.to_string().contains("invalid image size 0x100"));
    assert_eq!(err.path(), dir.join("zero.png"));
    Ok(std::fs::remove_dir_all(dir)?)
}

#[test]
fn palette_is_stable() {
    assert_eq!(palette(0), palette(10));
    assert_ne!(palette(0), palette(1));
}

/// Tiny images and very many categories squeeze the layout but must still render.
#[test]
fn cramped_layouts_do_not_panic() -> TestResult {
    let dir = temp_dir("cramped")?;
    let tiny = Some((160, 100));
    heatmap(
        &HeatmapSpec {
            size: tiny,
            ..sample_heatmap()
        },
        dir.join("heatmap_tiny"),
    )?;
    lines(
        &LinesSpec {
            size: tiny,
            ..sample_lines(true)
        },
        dir.join("lines_tiny"),
    )?;
    timeline(
        &TimelineSpec {
            size: tiny,
            ..sample_timeline()
        },
        dir.join("timeline_tiny"),
    )?;
    distribution(
        &DistributionSpec {
            size: tiny,
            ..sample_distribution()
        },
        dir.join("box_tiny"),
    )?;
    distribution_cdf(
        &DistributionSpec {
            size: tiny,
            ..sample_distribution()
        },
        dir.join("cdf_tiny"),
    )?;

    let names: Vec<String> = (0..300).map(|i| format!("category number {i}")).collect();
    let many = HeatmapSpec {
        title: "many".into(),
        x: names.clone(),
        y: names[..40].to_vec(),
        cells: vec![(0..300).map(|i| Some(f64::from(i))).collect(); 40],
        ..HeatmapSpec::default()
    };
    heatmap(&many, dir.join("heatmap_many"))?;
    let img = decode_png(&dir.join("heatmap_many.png"))?;
    assert_eq!((img.width, img.height), DEFAULT_SIZE);
    Ok(std::fs::remove_dir_all(dir)?)
}
