//! One logged request and its chain of upstream attempts. nginx writes
//! one item per attempt in `$upstream_addr`, `$upstream_status` and the
//! `$upstream_*_time` variables, joined by `", "` (the next server of the
//! same upstream) or `" : "` (an internal redirect to another upstream);
//! the attempts ran one after the other, so the k-th started at the
//! request's start plus the response times before it. An item that is the
//! upstream's name instead of an address is nginx's "no live upstreams".
//!
//! What an attempt's outcome was is read from its status and times, as
//! `ngx_http_upstream_next` sets them: a failed connect leaves
//! `$upstream_connect_time` at `-` and logs 502 (refused, reset) or 504
//! (timed out); a read timeout logs 504 with `$upstream_header_time` at
//! `-`. Without those two variables the connect and read timeouts in force
//! tell them apart: a 504 that lasted about `proxy_read_timeout` is a read
//! timeout, one that lasted `proxy_connect_timeout` a connect timeout, and
//! a 502 within [`REFUSED_MAX_S`] a refused connection.

use super::format::{Fields, Slot};
use crate::spec::Method;
use std::collections::HashMap;

/// A 502 that lasted at most this long without a connect time is a refused
/// connection (a closed port answers in one round trip).
pub const REFUSED_MAX_S: f64 = 0.003;

/// What happened to one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The node answered, with this status.
    Answered(u16),
    /// The connection was refused (a closed port: the process is down).
    Refused,
    /// The connect timed out (packets dropped: a partition, a full backlog).
    ConnectTimeout,
    /// Connected, but no response header within the read timeout.
    ReadTimeout,
    /// Connected, then closed or reset before a response header.
    Reset,
    /// The client gave up while the attempt waited (nginx's 499).
    Aborted,
}

impl Outcome {
    /// The node did not answer (what passive checks count as an error).
    pub fn is_hard_failure(self) -> bool {
        matches!(
            self,
            Outcome::Refused | Outcome::ConnectTimeout | Outcome::ReadTimeout | Outcome::Reset
        )
    }
}

/// Which server an attempt went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    Node(usize),
    /// nginx found no live server (the item is the upstream's name).
    NoLive,
    /// Not a server of the target: an index into the unknown table.
    Unknown(usize),
}

#[derive(Clone, Copy, Debug)]
pub struct Attempt {
    pub server: Server,
    /// Epoch seconds.
    pub start: f64,
    pub duration: f64,
    pub outcome: Outcome,
}

/// One access-log line.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub line: u64,
    /// Epoch seconds.
    pub start: f64,
    pub end: f64,
    /// The status the client got (499: it gave up).
    pub status: u16,
    pub method: Method,
    pub attempts: Vec<Attempt>,
    /// The log gave the end to the second only (`$time_local`).
    pub coarse: bool,
    /// HAProxy's `%rc` with its `+` (redispatched) as `redispatched`.
    pub retries: u32,
    pub redispatched: bool,
}

/// The servers of the target: names by address, and those the log names
/// that are not among them.
#[derive(Clone, Debug, Default)]
pub struct Servers {
    pub names: Vec<String>,
    by_addr: HashMap<String, usize>,
    /// The upstream's name (nginx writes it for "no live upstreams").
    pub group: Option<String>,
    /// Servers are added as the log names them (no config).
    pub open: bool,
    /// Addresses not in the target: (address, lines, first line).
    pub unknown: Vec<(String, u64, u64)>,
    unknown_at: HashMap<String, usize>,
    /// Addresses of other upstreams of the config: skipped, not unknown.
    pub others: HashMap<String, String>,
}

/// The most nodes a log may introduce without a config.
pub const MAX_LOG_NODES: usize = 10_000;

impl Servers {
    /// A fixed set: `(name, addresses it answers to)`.
    pub fn fixed(nodes: &[(String, Vec<String>)], group: Option<String>) -> Servers {
        let mut s = Servers {
            group,
            ..Servers::default()
        };
        for (i, (name, addrs)) in nodes.iter().enumerate() {
            s.names.push(name.clone());
            for a in addrs {
                s.by_addr.insert(a.clone(), i);
            }
        }
        s
    }

    /// Servers learnt from the log.
    pub fn open() -> Servers {
        Servers {
            open: true,
            ..Servers::default()
        }
    }

    pub fn lookup(&mut self, addr: &str, line: u64) -> Server {
        if let Some(&i) = self.by_addr.get(addr) {
            return Server::Node(i);
        }
        if self.group.as_deref() == Some(addr) {
            return Server::NoLive;
        }
        if self.open && self.names.len() < MAX_LOG_NODES && addr.contains(':') {
            let i = self.names.len();
            self.names.push(addr.to_string());
            self.by_addr.insert(addr.to_string(), i);
            return Server::Node(i);
        }
        if !addr.contains(':') && self.open {
            // The name of an upstream group: nothing was live.
            return Server::NoLive;
        }
        let i = match self.unknown_at.get(addr) {
            Some(&i) => i,
            None => {
                self.unknown.push((addr.to_string(), 0, line));
                self.unknown_at
                    .insert(addr.to_string(), self.unknown.len() - 1);
                self.unknown.len() - 1
            }
        };
        self.unknown[i].1 += 1;
        Server::Unknown(i)
    }
}

/// The gateway's timeouts, to tell a 504's cause when the log lacks the
/// connect and header times.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub connect_s: f64,
    pub read_s: f64,
}

fn items(s: &str) -> impl Iterator<Item = &str> {
    s.split(" : ").flat_map(|g| g.split(", ")).map(str::trim)
}

fn time_item(s: &str) -> Option<f64> {
    (s != "-").then(|| s.parse::<f64>().ok()).flatten()
}

/// The method of a `$request` line (`GET /x HTTP/1.1`).
pub fn method_of(request: &str) -> Method {
    match request.split(' ').next().unwrap_or("") {
        "HEAD" => Method::Head,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "POST" => Method::Post,
        "PATCH" => Method::Patch,
        "LOCK" => Method::Lock,
        _ => Method::Get,
    }
}

/// Reads an nginx line's fields into `req` (its attempts replaced).
pub fn nginx_request(
    f: &Fields,
    line: u64,
    servers: &mut Servers,
    t: Timeouts,
    req: &mut Request,
) -> Result<(), String> {
    req.line = line;
    req.attempts.clear();
    req.retries = 0;
    req.redispatched = false;
    req.coarse = false;
    let end = if let Some(m) = f.get(Slot::Msec) {
        super::clock::msec(m).ok_or_else(|| format!("$msec \"{m}\" is not a time"))?
    } else if let Some(tl) = f.get(Slot::TimeLocal) {
        req.coarse = true;
        super::clock::day_month_year(tl)
            .ok_or_else(|| format!("$time_local \"{tl}\" is not a time"))?
            .0
    } else if let Some(iso) = f.get(Slot::TimeIso8601) {
        req.coarse = true;
        super::clock::iso8601(iso)
            .ok_or_else(|| format!("$time_iso8601 \"{iso}\" is not a time"))?
    } else {
        return Err("no time".into());
    };
    let rt = f.get(Slot::RequestTime).unwrap_or("");
    let request_time: f64 = rt
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("$request_time \"{rt}\" is not a duration"))?;
    let st = f.get(Slot::Status).unwrap_or("");
    req.status = st
        .parse()
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or_else(|| format!("$status \"{st}\" is not a status"))?;
    req.end = end;
    // $time_local is the second the request ended in: its start lies
    // somewhere in that second minus $request_time; take the middle.
    req.start = if req.coarse {
        end + 0.5 - request_time
    } else {
        end - request_time
    };
    req.method = match (f.get(Slot::Method), f.get(Slot::Request)) {
        (Some(m), _) => method_of(m),
        (None, Some(r)) => method_of(r),
        (None, None) => Method::Get,
    };
    let addrs = f.get(Slot::UpstreamAddr).unwrap_or("-");
    if addrs == "-" || addrs.is_empty() {
        return Ok(()); // not proxied
    }
    let mut statuses = items(f.get(Slot::UpstreamStatus).unwrap_or(""));
    let mut times = items(f.get(Slot::UpstreamResponseTime).unwrap_or(""));
    let mut connects = f.get(Slot::UpstreamConnectTime).map(items);
    let mut headers = f.get(Slot::UpstreamHeaderTime).map(items);
    let mut at = req.start;
    let n = items(addrs).count();
    for (k, addr) in items(addrs).enumerate() {
        let status = statuses.next().unwrap_or("-");
        let dur = times.next().and_then(time_item).unwrap_or(0.0);
        let connect = connects.as_mut().map(|c| c.next().and_then(time_item));
        let header = headers.as_mut().map(|h| h.next().and_then(time_item));
        let server = servers.lookup(addr, line);
        if server == Server::NoLive {
            continue;
        }
        let last = k + 1 == n;
        let code: Option<u16> = status.parse().ok();
        let outcome = if last && req.status == 499 && matches!(code, None | Some(499)) {
            Outcome::Aborted
        } else {
            classify(code, dur, connect, header, t)
        };
        req.attempts.push(Attempt {
            server,
            start: at,
            duration: dur,
            outcome,
        });
        at += dur;
    }
    Ok(())
}

/// An attempt's outcome from its status and times (module doc).
fn classify(
    code: Option<u16>,
    dur: f64,
    connect: Option<Option<f64>>,
    header: Option<Option<f64>>,
    t: Timeouts,
) -> Outcome {
    let Some(code) = code else {
        return Outcome::Reset;
    };
    let near = |x: f64, timeout: f64| timeout > 0.0 && (x - timeout).abs() <= 0.05 * timeout + 0.01;
    match (code, connect, header) {
        (502, Some(None), _) => {
            if near(dur, t.connect_s) {
                Outcome::ConnectTimeout
            } else {
                Outcome::Refused
            }
        }
        (504, Some(None), _) => Outcome::ConnectTimeout,
        (502, Some(Some(_)), Some(None)) => Outcome::Reset,
        (504, Some(Some(_)), _) => Outcome::ReadTimeout,
        (504, None, Some(None)) => Outcome::ReadTimeout,
        (502, None, _) if dur <= REFUSED_MAX_S => Outcome::Refused,
        (504, None, _) if near(dur, t.read_s) => Outcome::ReadTimeout,
        (504, None, _) if near(dur, t.connect_s) => Outcome::ConnectTimeout,
        (c, ..) => Outcome::Answered(c),
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::presets;
    use super::*;

    const T: Timeouts = Timeouts {
        connect_s: 60.0,
        read_s: 1.0,
    };

    fn calib(line: &str, servers: &mut Servers) -> Result<Request, String> {
        let f = presets()
            .into_iter()
            .find(|f| f.name == "calibration")
            .unwrap();
        let fields = f.parse(line).ok_or("no match")?;
        let mut r = Request::default();
        nginx_request(&fields, 7, servers, T, &mut r)?;
        Ok(r)
    }

    #[test]
    fn a_retried_503_is_two_attempts_one_after_the_other() {
        let mut s = Servers::open();
        let r = calib(
            "1796157363.009 0.006 \"GET /r/80 HTTP/1.0\" 200 \"127.0.0.1:37601, 127.0.0.1:59377\" \"503, 200\" \"0.001, 0.005\"",
            &mut s,
        )
        .unwrap();
        assert_eq!(r.attempts.len(), 2);
        assert_eq!(r.attempts[0].outcome, Outcome::Answered(503));
        assert_eq!(r.attempts[1].server, Server::Node(1));
        assert!((r.attempts[1].start - (r.start + 0.001)).abs() < 1e-9);
        assert!((r.start - 1796157363.003).abs() < 1e-6);
    }

    #[test]
    fn a_client_abort_refusals_and_timeouts_are_told_apart() {
        let mut s = Servers::open();
        let r = calib(
            "1796157549.007 3.004 \"GET /r/90 HTTP/1.0\" 499 \"127.0.0.1:44683\" \"-\" \"3.004\"",
            &mut s,
        )
        .unwrap();
        assert_eq!(r.attempts[0].outcome, Outcome::Aborted);
        let r = calib("1.5 0.001 \"GET / HTTP/1.0\" 200 \"127.0.0.1:1, 127.0.0.1:2\" \"502, 200\" \"0.000, 0.001\"", &mut s).unwrap();
        assert_eq!(r.attempts[0].outcome, Outcome::Refused);
        let r = calib("9.5 1.006 \"GET / HTTP/1.0\" 200 \"127.0.0.1:1, 127.0.0.1:2\" \"504, 200\" \"1.001, 0.005\"", &mut s).unwrap();
        assert_eq!(r.attempts[0].outcome, Outcome::ReadTimeout);
        // A backend's own 502 that took a while is an answer.
        let r = calib(
            "9.5 0.050 \"GET / HTTP/1.0\" 502 \"127.0.0.1:1\" \"502\" \"0.050\"",
            &mut s,
        )
        .unwrap();
        assert_eq!(r.attempts[0].outcome, Outcome::Answered(502));
    }

    #[test]
    fn no_live_upstreams_and_unknown_servers() {
        let mut s = Servers::fixed(
            &[("a".into(), vec!["10.0.0.1:80".into()])],
            Some("be".into()),
        );
        let r = calib(
            "5.0 0.000 \"GET / HTTP/1.0\" 502 \"be\" \"502\" \"0.000\"",
            &mut s,
        )
        .unwrap();
        assert!(r.attempts.is_empty());
        let r = calib(
            "5.0 0.004 \"GET / HTTP/1.0\" 200 \"10.9.9.9:80\" \"200\" \"0.004\"",
            &mut s,
        )
        .unwrap();
        assert_eq!(r.attempts[0].server, Server::Unknown(0));
        assert_eq!(s.unknown, vec![("10.9.9.9:80".to_string(), 1, 7)]);
        assert!(calib("5.0 x \"GET / HTTP/1.0\" 200 \"-\" \"-\" \"-\"", &mut s).is_err());
    }
}
