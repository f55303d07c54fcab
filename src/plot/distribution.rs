//! Distribution charts: box plots with the raw samples overlaid as a strip, or empirical CDFs.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{Axis, AxisScale, finite_bounds, padded_range};
use super::error::DResult;
use super::error::PlotError;
use super::frame::{LegendItem, Swatch, draw_line, frame, no_data};
use super::mesh::{MeshOpts, PlotLayout, XLabels, num_y_area_width, plot, y_area_width};
use super::render::{Chart, render};
use super::theme::{MUTED, NO_DATA, TEXT, Theme, palette, text, text_size};

/// Input for [`distribution`] and [`distribution_cdf`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DistributionSpec {
    pub title: String,
    pub caption: String,
    /// Title of the group axis, e.g. `"policy"` (box plot x axis).
    pub group_label: String,
    /// Title of the value axis with unit, e.g. `"time to eject (s)"`
    /// (box plot y axis, CDF x axis).
    pub value_label: String,
    /// `(group name, samples)`; non-finite samples are ignored, empty groups say "no data".
    pub groups: Vec<(String, Vec<f64>)>,
    /// Consecutive runs of groups that belong together, `(label, how many groups)`
    /// (e.g. the points of a sweep sharing the values of all axes but the last):
    /// each cluster has one colour, named in the legend, with a gap between
    /// clusters. Empty: every group its own colour.
    pub clusters: Vec<(String, usize)>,
    /// The value axis (`Auto`: logarithmic when the samples span more than two decades).
    pub scale: AxisScale,
    /// The samples are counts: ticks at whole numbers only.
    pub integer: bool,
    /// Image size in pixels; `None` = [`super::DEFAULT_SIZE`].
    pub size: Option<(u32, u32)>,
}

/// Box plot per group (median, quartiles, whiskers at min and max) with every sample drawn
/// as a dot, spread sideways by a deterministic jitter. Writes `<stem>.png` and `<stem>.svg`.
pub fn distribution(spec: &DistributionSpec, stem: impl AsRef<Path>) -> Result<(), PlotError> {
    render(&BoxStrip(spec), stem.as_ref())
}

/// Empirical CDF per group (step lines). Writes `<stem>.png` and `<stem>.svg`.
pub fn distribution_cdf(spec: &DistributionSpec, stem: impl AsRef<Path>) -> Result<(), PlotError> {
    render(&Cdf(spec), stem.as_ref())
}

/// Sorted finite samples of each group.
fn sorted_groups(spec: &DistributionSpec) -> Vec<Vec<f64>> {
    spec.groups
        .iter()
        .map(|(_, v)| {
            let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            s.sort_by(f64::total_cmp);
            s
        })
        .collect()
}

/// Quantile `p` of sorted, non-empty `s` with linear interpolation (type 7).
fn quantile(s: &[f64], p: f64) -> f64 {
    let h = (s.len() - 1) as f64 * p;
    let i = h.floor() as usize;
    let f = h - i as f64;
    match s.get(i + 1) {
        Some(next) => s[i] + (next - s[i]) * f,
        None => s[i],
    }
}

/// Deterministic horizontal offset in `-0.5..0.5` for sample `k` (golden-ratio sequence).
fn jitter(k: usize) -> f64 {
    (k as f64 * 0.618_033_988_749_895 + 0.5).fract() - 0.5
}

struct BoxStrip<'a>(&'a DistributionSpec);

impl BoxStrip<'_> {
    /// The categories along the x axis: each group's index, with an empty
    /// slot between clusters; and each group's colour.
    fn slots(&self) -> (Vec<String>, Vec<Option<usize>>, Vec<RGBColor>) {
        let spec = self.0;
        let n = spec.groups.len();
        let mut cluster_of = vec![None; n];
        let mut k = 0;
        for (c, (_, len)) in spec.clusters.iter().enumerate() {
            for slot in cluster_of.iter_mut().skip(k).take(*len) {
                *slot = Some(c);
            }
            k += len;
        }
        let mut names = vec![];
        let mut slots = vec![];
        for (i, (name, _)) in spec.groups.iter().enumerate() {
            if i > 0 && cluster_of[i].is_some() && cluster_of[i] != cluster_of[i - 1] {
                names.push(String::new());
                slots.push(None);
            }
            names.push(name.clone());
            slots.push(Some(i));
        }
        let colors = (0..n)
            .map(|i| palette(cluster_of[i].unwrap_or(i)))
            .collect();
        (names, slots, colors)
    }

    fn legend(&self) -> Vec<LegendItem> {
        self.0
            .clusters
            .iter()
            .enumerate()
            .map(|(c, (label, _))| LegendItem::new(label, Swatch::Solid(palette(c))))
            .collect()
    }
}

impl Chart for BoxStrip<'_> {
    fn size(&self) -> Option<(u32, u32)> {
        self.0.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
        let spec = self.0;
        let mut groups = sorted_groups(spec);
        let log = spec.scale.is_log(groups.iter().flatten().copied());
        // The sample sizes, said once in the caption when they are all the same.
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        let same_n = sizes.windows(2).all(|w| w[0] == w[1]);
        let caption = match (same_n, sizes.first()) {
            (true, Some(n)) if *n > 0 && !spec.caption.is_empty() => {
                format!("{} · {n} samples per box", spec.caption)
            }
            (true, Some(n)) if *n > 0 => format!("{n} samples per box"),
            _ => spec.caption.clone(),
        };
        let body = frame(root, theme, &spec.title, &caption, &self.legend())?;
        let (names, slots, colors) = self.slots();
        if names.is_empty() {
            return no_data(&body, theme);
        }
        if log {
            for s in &mut groups {
                s.iter_mut().for_each(|v| *v = v.log10());
            }
        }
        let bounds = finite_bounds(groups.iter().flatten().copied());
        let mut y_range = padded_range(bounds, false, 0.06);
        if !same_n {
            // Head room for the "n = …" labels.
            y_range.end += (y_range.end - y_range.start) * 0.06;
        }

        let y_area = num_y_area_width(&body, theme, &y_range);
        let layout = PlotLayout::single(theme, y_area, XLabels::Names(&names));
        let y_desc = if log {
            format!("{} (log scale)", spec.value_label)
        } else {
            spec.value_label.clone()
        };
        let mesh = MeshOpts {
            x_desc: &spec.group_label,
            y_desc: &y_desc,
            ..MeshOpts::default()
        };
        let y_axis = if spec.integer && !log {
            Axis::int(y_range.clone())
        } else {
            Axis::linear_or_log(y_range.clone(), log)
        };
        let axes = (Axis::cat(&names), y_axis);
        let (chart, _) = plot(&body, theme, &layout, axes, mesh)?;

        let area = chart.plotting_area();
        let mid_y = (y_range.start + y_range.end) / 2.0;
        let half = 0.28;
        let n_style = text(theme.small, MUTED, HPos::Center, VPos::Top);
        // Per-box "n = …" only where they differ and fit side by side.
        let slot_px = area.dim_in_pixel().0 as i32 / names.len().max(1) as i32;
        let n_fits = text_size(&area.strip_coord_spec(), "n = 000", &n_style).0 as i32 <= slot_px;
        for (x, i) in slots.iter().enumerate() {
            let Some(i) = *i else { continue };
            let s = &groups[i];
            let x = x as f64;
            let color = colors[i];
            if s.is_empty() {
                let style = text(theme.label, NO_DATA, HPos::Center, VPos::Center);
                area.draw(&Text::new("no data", (x, mid_y), style))?;
                continue;
            }
            let (min, q1, med, q3, max) = (
                s[0],
                quantile(s, 0.25),
                quantile(s, 0.5),
                quantile(s, 0.75),
                s[s.len() - 1],
            );
            let whisker = color.stroke_width(theme.upx(2.0));
            area.draw(&PathElement::new(vec![(x, q3), (x, max)], whisker))?;
            area.draw(&PathElement::new(vec![(x, q1), (x, min)], whisker))?;
            for y in [min, max] {
                area.draw(&PathElement::new(
                    vec![(x - half / 2.0, y), (x + half / 2.0, y)],
                    whisker,
                ))?;
            }
            area.draw(&Rectangle::new(
                [(x - half, q1), (x + half, q3)],
                color.mix(0.22).filled(),
            ))?;
            area.draw(&Rectangle::new([(x - half, q1), (x + half, q3)], whisker))?;
            for (k, v) in s.iter().enumerate() {
                let at = (x + jitter(k) * half * 1.5, *v);
                area.draw(&Circle::new(at, theme.upx(3.5), color.mix(0.75).filled()))?;
                area.draw(&Circle::new(at, theme.upx(3.5), color.stroke_width(1)))?;
            }
            area.draw(&PathElement::new(
                vec![(x - half, med), (x + half, med)],
                TEXT.stroke_width(theme.upx(3.0)),
            ))?;
            if !same_n && n_fits {
                area.draw(&Text::new(
                    format!("n = {}", s.len()),
                    (x, y_range.end),
                    n_style.clone(),
                ))?;
            }
        }
        Ok(())
    }
}

struct Cdf<'a>(&'a DistributionSpec);

impl Chart for Cdf<'_> {
    fn size(&self) -> Option<(u32, u32)> {
        self.0.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
        let spec = self.0;
        let mut groups = sorted_groups(spec);
        let log = spec.scale.is_log(groups.iter().flatten().copied());
        if log {
            for s in &mut groups {
                s.iter_mut().for_each(|v| *v = v.log10());
            }
        }
        let legend: Vec<LegendItem> = if spec.groups.len() > 1 {
            spec.groups
                .iter()
                .zip(&groups)
                .enumerate()
                .map(|(i, ((name, _), s))| {
                    let label = if s.is_empty() {
                        format!("{name} (no data)")
                    } else {
                        name.clone()
                    };
                    LegendItem::new(label, Swatch::Dashed(palette(i), i, None))
                })
                .collect()
        } else {
            Vec::new()
        };
        let body = frame(root, theme, &spec.title, &spec.caption, &legend)?;
        let x_range = padded_range(finite_bounds(groups.iter().flatten().copied()), false, 0.03);
        let y_range = 0.0..1.02;
        let y_area = y_area_width(&body, theme, &["100%".into()]);
        let layout = PlotLayout::single(theme, y_area, XLabels::Ticks);
        let x_desc = if log {
            format!("{} (log scale)", spec.value_label)
        } else {
            spec.value_label.clone()
        };
        let mesh = MeshOpts {
            x_desc: &x_desc,
            y_desc: "share of samples ≤ x (%)",
            y_labels: 6,
            ..MeshOpts::default()
        };
        let x_axis = if spec.integer && !log {
            Axis::int(x_range)
        } else {
            Axis::linear_or_log(x_range, log)
        };
        let axes = (x_axis, Axis::percent(y_range));
        let (chart, _) = plot(&body, theme, &layout, axes, mesh)?;
        let area = chart.plotting_area();
        if groups.iter().all(Vec::is_empty) {
            return no_data(&area.strip_coord_spec(), theme);
        }
        for (i, s) in groups.iter().enumerate() {
            let Some(&first) = s.first() else { continue };
            let n = s.len() as f64;
            let mut path = vec![(first, 0.0)];
            for (k, v) in s.iter().enumerate() {
                path.push((*v, k as f64 / n));
                path.push((*v, (k + 1) as f64 / n));
            }
            draw_line(
                area,
                path,
                palette(i).stroke_width(theme.upx(3.0)),
                theme,
                i,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.0), 1.0);
        assert_eq!(quantile(&s, 0.5), 2.5);
        assert_eq!(quantile(&s, 1.0), 4.0);
        assert_eq!(quantile(&[7.0], 0.75), 7.0);
    }

    #[test]
    fn jitter_is_bounded_and_deterministic() {
        for k in 0..1000 {
            assert!((-0.5..0.5).contains(&jitter(k)));
            assert_eq!(jitter(k), jitter(k));
        }
    }
}
