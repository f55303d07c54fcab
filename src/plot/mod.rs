//! Charts for hcsim reports (heatmap, lines, timeline, distribution, scatter) as PNG + SVG, embedded font.
//!
//! Every chart function takes a plain spec struct and an output path *stem* and writes
//! `<stem>.png` and `<stem>.svg` (parent directories are created). Text is drawn with
//! DejaVu Sans compiled into the binary (see `assets/fonts/`), so no system fonts, fontconfig
//! or freetype are involved; the SVG keeps text as `<text>` with a `sans-serif` fallback.
//! Missing values (`None`, NaN, empty vectors) are skipped or shown as "no data", never panic.

mod axis;
mod distribution;
mod error;
mod frame;
mod heatmap;
mod lines;
mod mesh;
mod raster;
mod render;
mod scatter;
mod theme;
mod timeline;

#[cfg(test)]
mod tests;

pub use axis::{AxisScale, ValueFormat, finite_bounds as finite_bounds_of, fmt_sig};
pub use distribution::{DistributionSpec, distribution, distribution_cdf};
pub use error::PlotError;
pub use heatmap::{HeatmapSpec, heatmap};
pub use lines::{LinesSpec, Point, Series, XValue, lines};
pub use render::DEFAULT_SIZE;
pub use scatter::{PointKind, ScatterPoint, ScatterSpec, scatter};
pub use theme::{FOOTER, palette};
pub use timeline::{NodeTrack, TimelineSpec, timeline};
