//! HAProxy's logs: `option httplog` lines, the health-check lines of
//! `option log-health-checks` and the server state changes, behind a
//! syslog header (RFC 5424, RFC 3164 with or without `<PRI>`, as rsyslog
//! writes files) or none (`log stdout format raw`).
//!
//! The httplog format (doc/configuration.txt, "8.2.3. HTTP log format"):
//! `client [accept date] frontend backend/server TR/Tw/Tc/Tr/Ta status
//! bytes cookies termination_state actconn/feconn/beconn/srv_conn/retries
//! srv_queue/backend_queue {captures} "request"`. A `-1` time did not
//! happen: `Tc = -1` a failed connect, `Tr = -1` no response header; the
//! termination state's first letter says who ended it (`C`/`c` the client,
//! `S`/`s` the server, `s` by timeout) and its second when (`C` connect,
//! `H` headers). `retries` counts failed connects before the last attempt,
//! `+` in front when the last one was redispatched to another server.

use super::chain::{Attempt, Outcome, Request, Server, Servers};
use super::clock;

/// One HAProxy log line, read.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// A request (in the caller's `Request`).
    Request,
    /// `Health check for server be/A failed|succeeded ...`.
    Check {
        server: String,
        at: Option<f64>,
        outcome: Outcome,
    },
    /// `Server be/A is DOWN|UP ...`.
    State {
        server: String,
        at: Option<f64>,
        up: bool,
    },
    /// Other messages (start-up notices, `backend be has no server available!`).
    Other,
}

/// The syslog header's time (if any) and the message after it.
pub fn strip_syslog(line: &str, year: i64) -> (Option<f64>, &str) {
    let mut s = line;
    if s.starts_with('<')
        && let Some(i) = s.find('>')
        && s[1..i].bytes().all(|b| b.is_ascii_digit())
    {
        s = &s[i + 1..];
        if let Some(rest) = s.strip_prefix("1 ") {
            // RFC 5424: TIMESTAMP HOST APP PROCID MSGID SD MSG
            let mut parts = rest.splitn(7, ' ');
            let stamp = parts.next().unwrap_or("");
            let t = clock::iso8601(stamp);
            let (_h, _a, _p, _m) = (parts.next(), parts.next(), parts.next(), parts.next());
            let sd_msg = parts.next().unwrap_or("");
            let msg = parts.next().unwrap_or("");
            let msg = if sd_msg == "-" {
                msg
            } else {
                // structured data `[...]` then the message
                let all = &rest[rest.len() - (sd_msg.len() + 1 + msg.len()).min(rest.len())..];
                all.find("] ").map_or(msg, |j| &all[j + 2..])
            };
            return (t, msg);
        }
    }
    // RFC 3164: `Mmm dd hh:mm:ss host tag[pid]: msg` (dd padded with a space).
    let b = s.as_bytes();
    if b.len() > 16 && b[3] == b' ' && b[b.len().min(6)..].len() > 9 {
        let mon = &s[..3];
        let day = s[4..6].trim();
        let time = &s[7..15];
        if let Some(t) = clock::rfc3164(mon, day, time, year)
            && let Some(colon) = s[16..].find(": ")
        {
            return (Some(t), &s[16 + colon + 2..]);
        }
    }
    (None, s)
}

fn ms(s: &str) -> Option<f64> {
    let v: i64 = s.parse().ok()?;
    Some(v as f64 / 1000.0)
}

/// `backend/server` → the server's name (`<NOSRV>` for none).
fn server_of(s: &str) -> &str {
    s.rsplit_once('/').map_or(s, |(_, srv)| srv)
}

/// Reads a message (after the syslog header). A request fills `req`.
pub fn parse(
    msg: &str,
    header_time: Option<f64>,
    line: u64,
    servers: &mut Servers,
    connect_timeout_s: f64,
    req: &mut Request,
) -> Result<Line, String> {
    if let Some(rest) = msg
        .strip_prefix("Health check for server ")
        .or_else(|| msg.strip_prefix("Health check for backup server "))
    {
        let (srv, rest) = rest
            .split_once(' ')
            .ok_or("a health-check line without a result")?;
        let outcome = if rest.starts_with("succeeded") {
            Outcome::Answered(200)
        } else if rest.starts_with("failed") {
            check_failure(rest)
        } else {
            return Ok(Line::Other);
        };
        return Ok(Line::Check {
            server: server_of(srv.trim_end_matches(',')).to_string(),
            at: header_time,
            outcome,
        });
    }
    if let Some(rest) = msg
        .strip_prefix("Server ")
        .or_else(|| msg.strip_prefix("Backup Server "))
    {
        let (srv, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let up = if rest.starts_with("is UP") {
            true
        } else if rest.starts_with("is DOWN") || rest.starts_with("is going DOWN") {
            false
        } else {
            return Ok(Line::Other);
        };
        return Ok(Line::State {
            server: server_of(srv).to_string(),
            at: header_time,
            up,
        });
    }
    if !msg.contains(" [") || !msg.contains('"') {
        return Ok(Line::Other);
    }
    httplog(msg, line, servers, connect_timeout_s, req).map(|()| Line::Request)
}

/// The outcome a failed check's reason stands for.
fn check_failure(rest: &str) -> Outcome {
    if rest.contains("Layer4 timeout") {
        Outcome::ConnectTimeout
    } else if rest.contains("Layer7 timeout") || rest.contains("Layer6 timeout") {
        Outcome::ReadTimeout
    } else if rest.contains("Layer7 wrong status") {
        let code = rest
            .split(['<', '>', ' ', '\''])
            .filter_map(|w| {
                w.trim_matches(|c: char| !c.is_ascii_digit())
                    .parse::<u16>()
                    .ok()
            })
            .find(|c| (100..=599).contains(c));
        Outcome::Answered(code.unwrap_or(503))
    } else if rest.contains("Layer4 connection problem") && !rest.contains("refused") {
        Outcome::Reset
    } else {
        Outcome::Refused
    }
}

fn httplog(
    msg: &str,
    line: u64,
    servers: &mut Servers,
    connect_timeout_s: f64,
    req: &mut Request,
) -> Result<(), String> {
    let open = msg.find(" [").ok_or("no accept date")?;
    let close = msg[open..].find("] ").ok_or("no accept date")? + open;
    let date = &msg[open + 2..close];
    let start = clock::day_month_year(date)
        .ok_or_else(|| format!("accept date \"{date}\" is not a time"))?
        .0;
    let mut w = msg[close + 2..].split(' ');
    let _frontend = w.next().ok_or("no frontend")?;
    let be_srv = w.next().ok_or("no backend/server")?;
    let timers = w.next().ok_or("no timers")?;
    let status = w.next().ok_or("no status")?;
    let _bytes = w.next();
    let _cc = w.next();
    let _cs = w.next();
    let term = w.next().ok_or("no termination state")?;
    let conns = w.next().ok_or("no connection counts")?;
    let t: Vec<Option<f64>> = timers.split('/').map(ms).collect();
    let [tr, _tw, tc, tresp, ta] = t.as_slice() else {
        return Err(format!("timers \"{timers}\": expected TR/Tw/Tc/Tr/Ta"));
    };
    let (Some(_), Some(tc), Some(tresp), Some(ta)) = (*tr, *tc, *tresp, *ta) else {
        return Err(format!("timers \"{timers}\" are not numbers"));
    };
    let code: i32 = status
        .parse()
        .map_err(|_| format!("status \"{status}\" is not a status"))?;
    let retries_s = conns.rsplit('/').next().unwrap_or("0");
    req.redispatched = retries_s.starts_with('+');
    req.retries = retries_s
        .trim_start_matches('+')
        .parse()
        .map_err(|_| format!("retries \"{retries_s}\" is not a number"))?;
    let who = term.as_bytes().first().copied().unwrap_or(b'-');
    let when = term.as_bytes().get(1).copied().unwrap_or(b'-');
    let aborted = matches!(who, b'C' | b'c') && tresp < 0.0;
    req.line = line;
    req.coarse = false;
    req.start = start;
    req.end = start + ta.max(0.0);
    req.status = if aborted || code < 0 {
        499
    } else {
        code as u16
    };
    req.attempts.clear();
    let srv = server_of(be_srv);
    if srv == "<NOSRV>" {
        return Ok(());
    }
    let server = servers.lookup(srv, line);
    let outcome = if tc < 0.0 {
        match (who, when) {
            (b's', _) => Outcome::ConnectTimeout,
            (b'C' | b'c', _) => Outcome::Aborted,
            _ => Outcome::Refused,
        }
    } else if tresp < 0.0 {
        match who {
            b's' => Outcome::ReadTimeout,
            b'C' | b'c' => Outcome::Aborted,
            _ => Outcome::Reset,
        }
    } else {
        Outcome::Answered(code.max(0) as u16)
    };
    let last_len = (tc.max(0.0) + tresp.max(0.0)).min(ta.max(0.0));
    let retried_for = (ta.max(0.0) - last_len).max(0.0);
    if req.retries > 0 {
        // Failed connects before the last attempt: on the same server, or
        // on another one when redispatched (known only with two servers).
        let earlier = if req.redispatched {
            match (servers.names.len(), server) {
                (2, Server::Node(i)) => Some(Server::Node(1 - i)),
                _ => None,
            }
        } else {
            Some(server)
        };
        if let Some(s) = earlier {
            let each = retried_for / req.retries as f64;
            let kind = if connect_timeout_s > 0.0 && each >= 0.9 * connect_timeout_s {
                Outcome::ConnectTimeout
            } else {
                Outcome::Refused
            };
            for k in 0..req.retries {
                req.attempts.push(Attempt {
                    server: s,
                    start: start + k as f64 * each,
                    duration: each,
                    outcome: kind,
                });
            }
        }
    }
    req.attempts.push(Attempt {
        server,
        start: req.end - last_len,
        duration: last_len,
        outcome,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers() -> Servers {
        Servers::fixed(
            &[
                ("A".into(), vec!["A".into()]),
                ("B".into(), vec!["B".into()]),
            ],
            None,
        )
    }

    #[test]
    fn syslog_headers_of_each_kind_are_stripped() {
        let (t, m) = strip_syslog(
            "<134>1 2026-12-01T20:36:03.250000+00:00 host haproxy 77 - - Server be/A is DOWN",
            2026,
        );
        assert!((t.unwrap() - 1_796_157_363.25).abs() < 1e-6);
        assert_eq!(m, "Server be/A is DOWN");
        let (t, m) = strip_syslog("<134>Dec  1 20:36:03 haproxy[77]: Server be/A is UP", 2026);
        assert_eq!(t, Some(1_796_157_363.0));
        assert_eq!(m, "Server be/A is UP");
        let (t, m) = strip_syslog("Dec  1 20:36:03 lb1 haproxy[77]: x y", 2026);
        assert_eq!((t, m), (Some(1_796_157_363.0), "x y"));
        assert_eq!(strip_syslog("raw message", 2026), (None, "raw message"));
    }

    #[test]
    fn a_redispatched_request_charges_its_failed_connect_to_the_other_server() {
        let mut s = servers();
        let mut r = Request::default();
        let l = parse(
            "127.0.0.1:40000 [01/Dec/2026:20:36:03.100] calib_in be/B 0/0/0/5/6 200 120 - - ---- 1/1/0/0/+1 0/0 \"GET /r/1 HTTP/1.0\"",
            None, 3, &mut s, 1.0, &mut r,
        )
        .unwrap();
        assert_eq!(l, Line::Request);
        assert_eq!(r.retries, 1);
        assert!(r.redispatched);
        assert_eq!(r.attempts.len(), 2);
        assert_eq!(r.attempts[0].server, Server::Node(0));
        assert_eq!(r.attempts[0].outcome, Outcome::Refused);
        assert_eq!(r.attempts[1].outcome, Outcome::Answered(200));
        assert!((r.end - r.start - 0.006).abs() < 1e-6);
    }

    #[test]
    fn timeouts_aborts_and_checks() {
        let mut s = servers();
        let mut r = Request::default();
        parse("1.2.3.4:5 [01/Dec/2026:20:36:03.100] f be/A 0/0/1/-1/2001 504 0 - - sH-- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"", None, 1, &mut s, 1.0, &mut r).unwrap();
        assert_eq!(r.attempts[0].outcome, Outcome::ReadTimeout);
        parse("1.2.3.4:5 [01/Dec/2026:20:36:03.100] f be/A 0/0/1/-1/5000 -1 0 - - CH-- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"", None, 1, &mut s, 1.0, &mut r).unwrap();
        assert_eq!((r.status, r.attempts[0].outcome), (499, Outcome::Aborted));
        parse("1.2.3.4:5 [01/Dec/2026:20:36:03.100] f be/<NOSRV> 0/-1/-1/-1/0 503 0 - - SC-- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"", None, 1, &mut s, 1.0, &mut r).unwrap();
        assert!(r.attempts.is_empty());
        let l = parse("Health check for server be/A failed, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms, status: 1/2 UP.", Some(9.0), 1, &mut s, 1.0, &mut r).unwrap();
        assert_eq!(
            l,
            Line::Check {
                server: "A".into(),
                at: Some(9.0),
                outcome: Outcome::Refused
            }
        );
        let l = parse("Health check for server be/A failed, reason: Layer4 timeout, check duration: 1001ms, status: 0/2 DOWN.", None, 1, &mut s, 1.0, &mut r).unwrap();
        assert!(matches!(
            l,
            Line::Check {
                outcome: Outcome::ConnectTimeout,
                ..
            }
        ));
        assert!(parse("1.2.3.4:5 [01/Dec/2026:20:36:03.100] f be/A x/0/1/2/3 200 0 - - ---- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"", None, 1, &mut s, 1.0, &mut r).is_err());
    }
}
