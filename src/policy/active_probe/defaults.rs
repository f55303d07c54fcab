//! Serde defaults shared by the probe flavours' parameter structs.

use crate::engine::SimDuration;
use crate::policy::ProbeKind;

pub(super) fn http() -> ProbeKind {
    ProbeKind::Http
}
pub(super) fn tcp() -> ProbeKind {
    ProbeKind::Tcp
}
pub(super) fn one() -> u32 {
    1
}
pub(super) fn two() -> u32 {
    2
}
pub(super) fn three() -> u32 {
    3
}
pub(super) fn five() -> u32 {
    5
}
pub(super) fn ten() -> u32 {
    10
}
pub(super) fn one_s() -> SimDuration {
    SimDuration::from_secs(1)
}
pub(super) fn two_s() -> SimDuration {
    SimDuration::from_secs(2)
}
pub(super) fn ten_s() -> SimDuration {
    SimDuration::from_secs(10)
}
pub(super) fn thirty_s() -> SimDuration {
    SimDuration::from_secs(30)
}
