//! Scatter chart of a trade-off: one point per candidate on two metrics, the
//! frontier (Pareto set) highlighted and labelled, one point ringed as the choice.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{Axis, finite_bounds, padded_range};
use super::error::DResult;
use super::error::PlotError;
use super::frame::{LegendItem, Swatch, draw_marker, frame, no_data};
use super::mesh::{MeshOpts, PlotLayout, XLabels, num_y_area_width, plot};
use super::render::{Chart, render};
use super::theme::{NO_DATA, TEXT, Theme, palette, text};

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

const EXCLUDED: usize = 2;
const OTHER: usize = 0;
const FRONTIER: usize = 1;

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
        let mut legend = vec![];
        if has(&[PointKind::Other]) {
            legend.push(LegendItem::new(
                "candidate",
                Swatch::Line(palette(OTHER), Some(0)),
            ));
        }
        if has(&[PointKind::Excluded]) {
            legend.push(LegendItem::new(
                "breaks a constraint",
                Swatch::Solid(NO_DATA),
            ));
        }
        if has(&[PointKind::Frontier, PointKind::Chosen]) {
            legend.push(LegendItem::new(
                "Pareto set",
                Swatch::Solid(palette(FRONTIER)),
            ));
        }
        if has(&[PointKind::Chosen]) {
            legend.push(LegendItem::new("recommended", Swatch::Solid(palette(3))));
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
            draw_marker(area, (p.x, p.y), EXCLUDED, NO_DATA, theme.px(4.0))?;
        }
        for p in pts.iter().filter(|p| p.kind == PointKind::Other) {
            draw_marker(area, (p.x, p.y), 0, palette(OTHER), theme.px(5.0))?;
        }
        let mut front: Vec<&&ScatterPoint> = pts
            .iter()
            .filter(|p| matches!(p.kind, PointKind::Frontier | PointKind::Chosen))
            .collect();
        // Not joined: over more than two objectives, the set need not be a curve in these two.
        front.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
        let label_style = text(theme.label * 0.85, TEXT, HPos::Left, VPos::Bottom);
        for p in &front {
            draw_marker(area, (p.x, p.y), 1, palette(FRONTIER), theme.px(7.0))?;
            if !p.label.is_empty() {
                area.draw(
                    &(EmptyElement::at((p.x, p.y))
                        + Text::new(
                            p.label.clone(),
                            (theme.px(8.0), -theme.px(6.0)),
                            label_style.clone(),
                        )),
                )?;
            }
        }
        for p in pts.iter().filter(|p| p.kind == PointKind::Chosen) {
            let ring = ShapeStyle::from(palette(3)).stroke_width(theme.upx(3.0));
            area.draw(&(EmptyElement::at((p.x, p.y)) + Circle::new((0, 0), theme.px(14.0), ring)))?;
        }
        Ok(())
    }
}

use plotters::style::text_anchor::{HPos, VPos};
