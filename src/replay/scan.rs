//! Reading a whole log: its format found (or named), then every line
//! parsed into a request and handed to the [`Collector`], with what the
//! clients saw counted on the way. Bad lines are counted and the first few
//! kept with their number and reason; lines that are not for the target
//! (not proxied, another upstream or backend) are counted apart.

use super::chain::{self, Request, Servers, Timeouts};
use super::collect::Collector;
use super::format::{LogFormat, presets};
use super::haproxy_log::{self, Line};
use super::reader::LogReader;
use crate::engine::SimDuration;
use crate::error::Error;
use crate::spec::Method;
use crate::stats::Histogram;
use std::collections::BTreeMap;
use std::path::Path;

/// Lines looked at to find the format.
const SAMPLE: usize = 200;
/// Parsed lines whose earliest start becomes t = 0.
const ORIGIN_LINES: usize = 1000;
/// Bad lines kept for the report.
pub const FIRST_BAD: usize = 5;

/// Which kind of log.
#[derive(Clone, Debug)]
pub enum Kind {
    Nginx(LogFormat),
    /// `option httplog`; lines of other backends than this one are skipped.
    Haproxy {
        backend: Option<String>,
    },
}

impl Kind {
    pub fn name(&self) -> String {
        match self {
            Kind::Nginx(f) => format!("nginx log_format `{}` ({})", f.name, f.origin),
            Kind::Haproxy { .. } => "HAProxy option httplog".into(),
        }
    }
}

/// What the clients saw, as the log tells it.
#[derive(Clone, Debug, Default)]
pub struct ClientLog {
    pub requests: u64,
    pub status: BTreeMap<u16, u64>,
    /// `$request_time` of every request.
    pub latency: Histogram,
    /// `$request_time` of the 499s (the clients' give-ups).
    pub gave_up: Histogram,
    pub methods: BTreeMap<String, u64>,
    /// Seconds since the origin.
    pub first_start: f64,
    pub last_start: f64,
    pub last_end: f64,
}

/// A line that could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct BadLine {
    pub line: u64,
    pub reason: String,
}

/// The whole log, read.
pub struct Scan {
    pub kind: Kind,
    pub collector: Collector,
    pub servers: Servers,
    pub client: ClientLog,
    pub lines: u64,
    pub bad: u64,
    pub first_bad: Vec<BadLine>,
    /// Lines with no upstream (`$upstream_addr` is `-`).
    pub not_proxied: u64,
    /// Lines for another upstream or backend.
    pub elsewhere: u64,
    /// Times were whole seconds (`$time_local`).
    pub coarse: bool,
    /// `$time_local`'s offset east of UTC, when the log has one.
    pub zone: Option<f64>,
    /// The year of the first dated line (for RFC 3164 headers).
    pub year: i64,
}

/// How to read the log.
pub struct Options<'a> {
    pub servers: Servers,
    pub timeouts: Timeouts,
    /// Keep only lines whose `$proxy_upstream_name` is this.
    pub upstream_name: Option<String>,
    /// Called with (bytes read, file size) now and then.
    pub progress: &'a mut dyn FnMut(u64, u64),
}

/// Finds the format of `path` among `candidates` (a config's
/// `log_format`s, then the presets) and HAProxy's httplog: the one most of
/// the first lines match. A format that matches but lacks fields replay
/// needs is an error naming them.
pub fn detect(
    path: &Path,
    candidates: &[LogFormat],
    haproxy_backend: Option<String>,
) -> Result<Kind, Error> {
    let mut r = LogReader::open(path)?;
    let mut sample = vec![];
    while sample.len() < SAMPLE {
        match r.next_line()? {
            Some((_, l)) if l.trim().is_empty() => {}
            Some((_, l)) => sample.push(l.into_owned()),
            None => break,
        }
    }
    if sample.is_empty() {
        return Err(Error::Usage(format!(
            "{}: the log is empty: there is no request to replay",
            path.display()
        )));
    }
    let mut all: Vec<LogFormat> = candidates.to_vec();
    all.extend(presets());
    let score = |f: &LogFormat| sample.iter().filter(|l| f.parse(l).is_some()).count();
    let best = all
        .iter()
        .map(|f| (score(f), f))
        .max_by_key(|(s, f)| (*s, f.missing().0.is_empty()));
    let ha = sample
        .iter()
        .filter(|l| {
            let (_, msg) = haproxy_log::strip_syslog(l, 2000);
            let mut s = Servers::open();
            let mut req = Request::default();
            matches!(
                haproxy_log::parse(msg, None, 0, &mut s, 0.0, &mut req),
                Ok(Line::Request | Line::Check { .. } | Line::State { .. })
            )
        })
        .count();
    let half = sample.len().div_ceil(2);
    if ha >= half && best.is_none_or(|(s, _)| ha >= s) {
        return Ok(Kind::Haproxy {
            backend: haproxy_backend,
        });
    }
    match best {
        Some((s, f)) if s >= half => {
            let missing = f.missing();
            if !missing.0.is_empty() {
                return Err(Error::Usage(format!(
                    "{}: the lines are in the format `{}` ({}), which lacks what a replay needs: {missing}. \
                     Log with a log_format that has them, e.g. \
                     log_format replay '$msec $request_time \"$request\" $status \"$upstream_addr\" \
                     \"$upstream_status\" \"$upstream_response_time\" \"$upstream_connect_time\" \"$upstream_header_time\"';",
                    path.display(),
                    f.name,
                    f.origin
                )));
            }
            Ok(Kind::Nginx(f.clone()))
        }
        _ => {
            let names: Vec<String> = all.iter().map(|f| format!("`{}`", f.name)).collect();
            Err(Error::Usage(format!(
                "{}: the lines are in no known format (tried {}, and HAProxy's option httplog): line 1 is {:?}. \
                 Name the format with --log-format NAME (a log_format of --config) or --log-format 'FORMAT' \
                 (its text); a replay needs per request: a time ($msec, $time_local or $time_iso8601), \
                 $request_time, $status, $upstream_addr, $upstream_status and $upstream_response_time",
                path.display(),
                names.join(", "),
                excerpt(&sample[0])
            )))
        }
    }
}

fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(120).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

/// One line's outcome.
enum Parsed {
    Request,
    Check(String, Option<f64>, chain::Outcome),
    State(String, Option<f64>, bool),
    Skip,
}

struct LineReader<'k> {
    kind: &'k Kind,
    year: i64,
    last_time: Option<f64>,
    timeouts: Timeouts,
    upstream_name: Option<&'k str>,
}

impl LineReader<'_> {
    fn read(
        &mut self,
        text: &str,
        line: u64,
        servers: &mut Servers,
        req: &mut Request,
    ) -> Result<Parsed, String> {
        let (t, upstream_name) = (self.timeouts, self.upstream_name);
        match self.kind {
            Kind::Nginx(f) => {
                let fields = f
                    .parse(text)
                    .ok_or_else(|| format!("does not match the format `{}`", f.name))?;
                if let (Some(want), Some(got)) =
                    (upstream_name, fields.get(super::format::Slot::UpstreamName))
                    && want != got
                {
                    return Ok(Parsed::Skip);
                }
                chain::nginx_request(&fields, line, servers, t, req)?;
                Ok(Parsed::Request)
            }
            Kind::Haproxy { backend } => {
                let (at, msg) = haproxy_log::strip_syslog(text, self.year);
                if let Some(b) = backend
                    && let Some(be) = httplog_backend(msg)
                    && be != b
                {
                    return Ok(Parsed::Skip);
                }
                let at = at.or(self.last_time);
                match haproxy_log::parse(msg, at, line, servers, t.connect_s, req)? {
                    Line::Request => {
                        self.last_time = Some(req.end);
                        Ok(Parsed::Request)
                    }
                    Line::Check {
                        server,
                        at,
                        outcome,
                    } => Ok(Parsed::Check(server, at, outcome)),
                    Line::State { server, at, up } => Ok(Parsed::State(server, at, up)),
                    Line::Other => Ok(Parsed::Skip),
                }
            }
        }
    }
}

/// The backend of an httplog line (`frontend backend/server ...`).
fn httplog_backend(msg: &str) -> Option<&str> {
    let close = msg.find("] ")?;
    let mut w = msg[close + 2..].split(' ');
    w.next()?;
    w.next()?.split_once('/').map(|(b, _)| b)
}

/// The earliest request start among the first parsed lines (t = 0), and
/// the year of the first dated line.
fn origin(path: &Path, kind: &Kind, opts: &Options) -> Result<(f64, i64), Error> {
    let mut r = LogReader::open(path)?;
    let mut servers = opts.servers.clone();
    let mut lr = LineReader {
        kind,
        year: 2000,
        last_time: None,
        timeouts: opts.timeouts,
        upstream_name: opts.upstream_name.as_deref(),
    };
    let mut req = Request::default();
    let mut n = 0;
    let mut first: Option<f64> = None;
    let mut year = None;
    while n < ORIGIN_LINES {
        let Some((line, text)) = r.next_line()? else {
            break;
        };
        if let Ok(Parsed::Request) = lr.read(&text, line, &mut servers, &mut req) {
            n += 1;
            first = Some(first.map_or(req.start, |f| f.min(req.start)));
            year.get_or_insert(super::clock::year_of(req.start));
        }
    }
    Ok((first.unwrap_or(0.0), year.unwrap_or(2000)))
}

/// Reads every line of `path`.
pub fn scan(path: &Path, kind: Kind, mut opts: Options) -> Result<Scan, Error> {
    let (t0, year) = origin(path, &kind, &opts)?;
    let mut r = LogReader::open(path)?;
    let size = r.size;
    let mut servers = std::mem::take(&mut opts.servers);
    let mut s = Scan {
        kind: kind.clone(),
        collector: Collector::new(t0),
        servers: Servers::default(),
        client: ClientLog {
            first_start: f64::INFINITY,
            ..ClientLog::default()
        },
        lines: 0,
        bad: 0,
        first_bad: vec![],
        not_proxied: 0,
        elsewhere: 0,
        coarse: false,
        zone: None,
        year,
    };
    let mut lr = LineReader {
        kind: &kind,
        year,
        last_time: None,
        timeouts: opts.timeouts,
        upstream_name: opts.upstream_name.as_deref(),
    };
    let mut req = Request::default();
    let mut next_report = 0u64;
    let read = r.counter();
    while let Some((line, text)) = r.next_line()? {
        if text.trim().is_empty() {
            continue;
        }
        s.lines += 1;
        let at = read.load(std::sync::atomic::Ordering::Relaxed);
        if at >= next_report {
            (opts.progress)(at, size);
            next_report = at + (size / 200).max(1 << 20);
        }
        let parsed = lr.read(&text, line, &mut servers, &mut req);
        match parsed {
            Err(reason) => {
                s.bad += 1;
                if s.first_bad.len() < FIRST_BAD {
                    s.first_bad.push(BadLine { line, reason });
                }
            }
            Ok(Parsed::Skip) => s.elsewhere += 1,
            Ok(Parsed::Check(name, at, outcome)) => {
                if let (Some(at), chain::Server::Node(i)) = (at, servers.lookup(&name, line)) {
                    s.collector.check(i, at, outcome);
                }
            }
            Ok(Parsed::State(name, at, up)) => {
                if let (Some(at), chain::Server::Node(i)) = (at, servers.lookup(&name, line)) {
                    s.collector.state(i, at, up);
                }
            }
            Ok(Parsed::Request) => {
                if req.attempts.is_empty()
                    && !matches!(kind, Kind::Haproxy { .. })
                    && req_unproxied(&text, &kind)
                {
                    s.not_proxied += 1;
                    continue;
                }
                if req
                    .attempts
                    .iter()
                    .any(|a| matches!(a.server, chain::Server::Unknown(_)))
                    && req
                        .attempts
                        .iter()
                        .all(|a| !matches!(a.server, chain::Server::Node(_)))
                {
                    // Every server of the line is unknown: it is counted
                    // there, and the line is not the target's.
                    s.elsewhere += 1;
                    continue;
                }
                s.coarse |= req.coarse;
                count_client(&mut s.client, &req, t0);
                s.collector.request(&req);
            }
        }
    }
    (opts.progress)(size, size);
    s.collector.release(true);
    for n in &mut s.collector.nodes {
        n.finish();
    }
    while s.collector.nodes.len() < servers.names.len() {
        s.collector.nodes.push(Default::default());
    }
    if let Kind::Nginx(f) = &kind
        && f.text().contains("$time_local")
        && let Some(z) = zone_of(path, f)?
    {
        s.zone = Some(z);
    }
    s.servers = servers;
    Ok(s)
}

/// A line whose `$upstream_addr` is `-` (served by nginx itself).
fn req_unproxied(text: &str, kind: &Kind) -> bool {
    match kind {
        Kind::Nginx(f) => f
            .parse(text)
            .and_then(|x| x.get(super::format::Slot::UpstreamAddr))
            .is_none_or(|a| a == "-" || a.is_empty()),
        Kind::Haproxy { .. } => false,
    }
}

fn count_client(c: &mut ClientLog, r: &Request, t0: f64) {
    c.requests += 1;
    *c.status.entry(r.status).or_default() += 1;
    let d = SimDuration::from_secs_f64((r.end - r.start).max(0.0));
    c.latency.record(d);
    if r.status == 499 {
        c.gave_up.record(d);
    }
    let m = match r.method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Post => "POST",
        Method::Patch => "PATCH",
        Method::Lock => "LOCK",
    };
    *c.methods.entry(m.to_string()).or_default() += 1;
    let (s, e) = (r.start - t0, r.end - t0);
    c.first_start = c.first_start.min(s);
    c.last_start = c.last_start.max(s);
    c.last_end = c.last_end.max(e);
}

/// `$time_local`'s UTC offset, from the first line that has one.
fn zone_of(path: &Path, f: &LogFormat) -> Result<Option<f64>, Error> {
    let mut r = LogReader::open(path)?;
    for _ in 0..SAMPLE {
        let Some((_, l)) = r.next_line()? else { break };
        if let Some(tl) = f
            .parse(&l)
            .and_then(|x| x.get(super::format::Slot::TimeLocal))
            && let Some((_, z)) = super::clock::day_month_year(tl)
        {
            return Ok(z);
        }
    }
    Ok(None)
}

/// nginx's error log: the "upstream server temporarily disabled" lines,
/// as (epoch seconds, the upstream address), times read in `zone`.
pub fn disabled_lines(path: &Path, zone: f64) -> Result<Vec<(f64, String)>, Error> {
    let mut r = LogReader::open(path)?;
    let mut out = vec![];
    while let Some((_, l)) = r.next_line()? {
        if !l.contains("upstream server temporarily disabled") {
            continue;
        }
        let mut w = l.splitn(3, ' ');
        let (Some(d), Some(t)) = (w.next(), w.next()) else {
            continue;
        };
        let Some(at) = super::clock::error_log(d, t, zone) else {
            continue;
        };
        let Some(i) = l.find("upstream: \"") else {
            continue;
        };
        let rest = &l[i + 11..];
        let url = rest.split('"').next().unwrap_or("");
        let addr = url
            .split("://")
            .nth(1)
            .unwrap_or(url)
            .split('/')
            .next()
            .unwrap_or("");
        out.push((at, addr.to_string()));
    }
    Ok(out)
}
