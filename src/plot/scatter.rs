//! Scatter chart of a trade-off: one point per candidate on two metrics, the
//! frontier (Pareto set) highlighted and labelled, one point ringed as the choice.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{Axis, finite_bounds, padded_range};
use super::error::DResult;
use super::error::PlotError;
use super::frame::{LegendItem, Swatch, draw_marker, frame, no_data, spread_labels};
use super::mesh::{MeshOpts, Plot, PlotLayout, XLabels, num_y_area_width, plot};
use super::render::{Chart, render};
use super::theme::{NO_DATA, TEXT, Theme, palette, text, text_size};

/// What a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// Breaks a constraint: drawn small and grey.
    Excluded,
    /// Meets the constraints, not on the frontier.
    Other,
    /// On the frontier: highlighted and labelled.
    Frontier,
    /// On the frontier and chosen: also ringed and labelled.
    Chosen,
}

/// One point; non-finite coordinates are skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct ScatterPoint {
    pub x: f64,
    pub y: f64,
    pub kind: PointKind,
    /// Shown next to frontier points (e.g. the candidate's settings).
    pub label: String,
}

/// Input for [`scatter`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScatterSpec {
    pub title: String,
    pub caption: String,
    pub x_label: String,
    pub y_label: String,
    pub points: Vec<ScatterPoint>,
    /// Image size in pixels; `None` = [`super::DEFAULT_SIZE`].
    pub size: Option<(u32, u32)>,
}

/// Writes `<stem>.png` and `<stem>.svg`.
pub fn scatter(spec: &ScatterSpec, stem: impl AsRef<Path>) -> Result<(), PlotError> {
    render(spec, stem.as_ref())
}

/// Palette indices and marker shapes and radii of the three kinds of point.
const OTHER: usize = 0;
const FRONTIER: usize = 1;
const EXCLUDED_SHAPE: usize = 2;
const OTHER_SHAPE: usize = 0;
const FRONTIER_SHAPE: usize = 1;
const EXCLUDED_R: f64 = 4.0;
const OTHER_R: f64 = 5.0;
const FRONTIER_R: f64 = 7.0;
/// Palette index of the ring around the recommended point.
const RING: usize = 3;

impl Chart for ScatterSpec {
    fn size(&self) -> Option<(u32, u32)> {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, theme: &Theme) -> DResult {
        let pts: Vec<&ScatterPoint> = self
            .points
            .iter()
            .filter(|p| p.x.is_finite() && p.y.is_finite())
            .collect();
        let has = |k: &[PointKind]| pts.iter().any(|p| k.contains(&p.kind));
        // Each entry shows the very mark its points are drawn with.
        let mut legend = vec![];
        if has(&[PointKind::Other]) {
            let mark = Swatch::Marker(palette(OTHER), OTHER_SHAPE, OTHER_R);
            legend.push(LegendItem::new("candidate", mark));
        }
        if has(&[PointKind::Excluded]) {
            let mark = Swatch::Marker(NO_DATA, EXCLUDED_SHAPE, EXCLUDED_R);
            legend.push(LegendItem::new("breaks a constraint", mark));
        }
        if has(&[PointKind::Frontier, PointKind::Chosen]) {
            let mark = Swatch::Marker(palette(FRONTIER), FRONTIER_SHAPE, FRONTIER_R);
            legend.push(LegendItem::new("Pareto set", mark));
        }
        if has(&[PointKind::Chosen]) {
            let mark = Swatch::Ringed(
                palette(FRONTIER),
                FRONTIER_SHAPE,
                FRONTIER_R,
                palette(RING),
                10.0,
            );
            legend.push(LegendItem::new("recommended", mark));
        }
        let body = frame(root, theme, &self.title, &self.caption, &legend)?;
        let x_range = padded_range(finite_bounds(pts.iter().map(|p| p.x)), true, 0.06);
        let y_range = padded_range(finite_bounds(pts.iter().map(|p| p.y)), true, 0.08);
        let y_area = num_y_area_width(&body, theme, &y_range);
        let layout = PlotLayout::single(theme, y_area, XLabels::Ticks);
        let mesh = MeshOpts {
            x_desc: &self.x_label,
            y_desc: &self.y_label,
            ..MeshOpts::default()
        };
        let (chart, _) = plot(
            &body,
            theme,
            &layout,
            (Axis::num(x_range), Axis::num(y_range)),
            mesh,
        )?;
        let area = chart.plotting_area();
        if pts.is_empty() {
            return no_data(&area.strip_coord_spec(), theme);
        }
        for p in pts.iter().filter(|p| p.kind == PointKind::Excluded) {
            let r = theme.px(EXCLUDED_R);
            draw_marker(area, (p.x, p.y), EXCLUDED_SHAPE, NO_DATA, r)?;
        }
        for p in pts.iter().filter(|p| p.kind == PointKind::Other) {
            let r = theme.px(OTHER_R);
            draw_marker(area, (p.x, p.y), OTHER_SHAPE, palette(OTHER), r)?;
        }
        let mut front: Vec<&&ScatterPoint> = pts
            .iter()
            .filter(|p| matches!(p.kind, PointKind::Frontier | PointKind::Chosen))
            .collect();
        // Not joined: over more than two objectives, the set need not be a curve in these two.
        front.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
        for p in &front {
            let r = theme.px(FRONTIER_R);
            draw_marker(area, (p.x, p.y), FRONTIER_SHAPE, palette(FRONTIER), r)?;
        }
        for p in pts.iter().filter(|p| p.kind == PointKind::Chosen) {
            let ring = ShapeStyle::from(palette(RING)).stroke_width(theme.upx(3.0));
            area.draw(&(EmptyElement::at((p.x, p.y)) + Circle::new((0, 0), theme.px(14.0), ring)))?;
        }
        draw_labels(&chart, theme, &front)
    }
}

/// Names the frontier points beside them: right of the point, or left where
/// the label would leave the plot; labels that would overlap are spread
/// apart vertically, each joined to its point by a thin line when moved.
fn draw_labels<DB: DrawingBackend>(
    chart: &Plot<DB>,
    theme: &Theme,
    front: &[&&ScatterPoint],
) -> DResult {
    let area = chart.plotting_area();
    let flat = area.strip_coord_spec();
    let (w, _) = flat.dim_in_pixel();
    let base = area.get_base_pixel();
    let style = text(theme.label * 0.85, TEXT, HPos::Left, VPos::Center);
    let labelled: Vec<&&ScatterPoint> = front
        .iter()
        .copied()
        .filter(|p| !p.label.is_empty())
        .collect();
    let at: Vec<(i32, i32)> = labelled
        .iter()
        .map(|p| {
            let (x, y) = chart.backend_coord(&(p.x, p.y));
            (x - base.0, y - base.1)
        })
        .collect();
    let gap = text_size(&flat, "Ag", &style).1 as i32 + theme.px(2.0);
    let offset = theme.px(16.0);
    // Labels on the same side are spread apart; the two sides separately.
    let right: Vec<bool> = labelled
        .iter()
        .zip(&at)
        .map(|(p, (x, _))| x + offset + (text_size(&flat, &p.label, &style).0 as i32) < w as i32)
        .collect();
    let mut ys = vec![0; labelled.len()];
    for side in [true, false] {
        let idx: Vec<usize> = (0..labelled.len()).filter(|&i| right[i] == side).collect();
        let wanted: Vec<i32> = idx.iter().map(|&i| at[i].1 - theme.px(8.0)).collect();
        for (k, y) in spread_labels(&wanted, gap).into_iter().enumerate() {
            ys[idx[k]] = y;
        }
    }
    for (i, p) in labelled.iter().enumerate() {
        let (x, y) = at[i];
        let (lx, style) = if right[i] {
            (x + offset, style.clone())
        } else {
            (x - offset, style.pos(Pos::new(HPos::Right, VPos::Center)))
        };
        if (ys[i] - (y - theme.px(8.0))).abs() > gap / 2 {
            flat.draw(&PathElement::new(
                vec![(x, y), (lx, ys[i])],
                ShapeStyle::from(NO_DATA).stroke_width(1),
            ))?;
        }
        flat.draw_text(&p.label, &style, (lx, ys[i]))?;
    }
    Ok(())
}

use plotters::style::text_anchor::{HPos, Pos, VPos};
