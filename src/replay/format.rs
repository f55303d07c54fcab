//! nginx access-log formats: a `log_format` string compiled into literals
//! and variables (`ngx_http_log_compile_format` in
//! src/http/modules/ngx_http_log_module.c: `$name` or `${name}`, the rest
//! literal), and a line matched against it. A variable's value ends where
//! the next literal starts; the `$upstream_*` lists (`ngx_http_upstream_
//! addr_variable` and its siblings in ngx_http_upstream.c: attempts joined
//! by `", "`, upstream groups by `" : "`) and `$time_local` (always 26
//! characters) are matched by their own shape, so a space-separated format
//! such as ingress-nginx's reads them whole.
//!
//! The presets are the formats people have: nginx's built-in `combined`
//! (no upstream fields: recognised, then refused naming what is missing),
//! ingress-nginx's default `log-format-upstream`
//! (internal/ingress/controller/config/config.go), the "upstream timing"
//! format (`rt= uct= uht= urt= ua= us=`) and the calibration harness's own.

use std::fmt;

/// The variables replay reads; the others are matched and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    Msec,
    TimeLocal,
    TimeIso8601,
    RequestTime,
    Status,
    Request,
    Method,
    UpstreamAddr,
    UpstreamStatus,
    UpstreamResponseTime,
    UpstreamConnectTime,
    UpstreamHeaderTime,
    UpstreamName,
}

const SLOTS: usize = 13;

impl Slot {
    fn of(var: &str) -> Option<Slot> {
        Some(match var {
            "msec" => Slot::Msec,
            "time_local" => Slot::TimeLocal,
            "time_iso8601" => Slot::TimeIso8601,
            "request_time" => Slot::RequestTime,
            "status" => Slot::Status,
            "request" => Slot::Request,
            "request_method" => Slot::Method,
            "upstream_addr" => Slot::UpstreamAddr,
            "upstream_status" => Slot::UpstreamStatus,
            "upstream_response_time" => Slot::UpstreamResponseTime,
            "upstream_connect_time" => Slot::UpstreamConnectTime,
            "upstream_header_time" => Slot::UpstreamHeaderTime,
            "proxy_upstream_name" => Slot::UpstreamName,
            _ => return None,
        })
    }

    pub fn var(self) -> &'static str {
        match self {
            Slot::Msec => "$msec",
            Slot::TimeLocal => "$time_local",
            Slot::TimeIso8601 => "$time_iso8601",
            Slot::RequestTime => "$request_time",
            Slot::Status => "$status",
            Slot::Request => "$request",
            Slot::Method => "$request_method",
            Slot::UpstreamAddr => "$upstream_addr",
            Slot::UpstreamStatus => "$upstream_status",
            Slot::UpstreamResponseTime => "$upstream_response_time",
            Slot::UpstreamConnectTime => "$upstream_connect_time",
            Slot::UpstreamHeaderTime => "$upstream_header_time",
            Slot::UpstreamName => "$proxy_upstream_name",
        }
    }
}

/// How a variable's value is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Up to the next literal (the first place the rest of the line matches).
    Text,
    /// `a, b : c`: items without spaces or commas, joined by `", "` or `" : "`.
    List,
    /// `10/Oct/2000:13:55:36 -0700`.
    TimeLocal,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Lit(String),
    Var {
        name: String,
        slot: Option<Slot>,
        shape: Shape,
    },
}

/// A compiled `log_format`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogFormat {
    /// Its name (`combined`, the `log_format` directive's first argument).
    pub name: String,
    /// Where it came from (`nginx.conf:12`, `preset`, `--log-format`).
    pub origin: String,
    toks: Vec<Tok>,
}

/// The values of one line, by slot (`None`: not in the format).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fields<'a> {
    values: [Option<&'a str>; SLOTS],
}

impl<'a> Fields<'a> {
    pub fn get(&self, s: Slot) -> Option<&'a str> {
        self.values[s as usize]
    }
}

/// What a format lacks for replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing(pub Vec<&'static str>);

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}

/// The most places a line is tried at before it is called malformed (a
/// format with several free-text fields could otherwise backtrack long).
const MAX_TRIES: usize = 256;

impl LogFormat {
    /// Compiles a `log_format` string (the directive's arguments joined, as
    /// nginx joins them).
    pub fn compile(name: &str, origin: &str, text: &str) -> Result<LogFormat, String> {
        let mut toks = vec![];
        let mut lit = String::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'$' {
                let (var, next) = if b.get(i + 1) == Some(&b'{') {
                    let end = text[i + 2..].find('}').ok_or_else(|| {
                        format!("the variable at column {} has no closing }}", i + 1)
                    })?;
                    (&text[i + 2..i + 2 + end], i + 3 + end)
                } else {
                    let len = text[i + 1..]
                        .bytes()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                        .count();
                    (&text[i + 1..i + 1 + len], i + 1 + len)
                };
                if var.is_empty() {
                    return Err(format!("a `$` without a variable name at column {}", i + 1));
                }
                if !lit.is_empty() {
                    toks.push(Tok::Lit(std::mem::take(&mut lit)));
                }
                let shape = if var == "time_local" {
                    Shape::TimeLocal
                } else if var.starts_with("upstream_") {
                    Shape::List
                } else {
                    Shape::Text
                };
                toks.push(Tok::Var {
                    name: var.to_string(),
                    slot: Slot::of(var),
                    shape,
                });
                i = next;
            } else {
                let ch = text[i..].chars().next().unwrap_or(' ');
                lit.push(ch);
                i += ch.len_utf8();
            }
        }
        if !lit.is_empty() {
            toks.push(Tok::Lit(lit));
        }
        if toks.iter().all(|t| matches!(t, Tok::Lit(_))) {
            return Err("the format has no variable".into());
        }
        Ok(LogFormat {
            name: name.to_string(),
            origin: origin.to_string(),
            toks,
        })
    }

    /// The format as nginx would write it back.
    pub fn text(&self) -> String {
        self.toks
            .iter()
            .map(|t| match t {
                Tok::Lit(s) => s.clone(),
                Tok::Var { name, .. } => format!("${name}"),
            })
            .collect()
    }

    fn has(&self, s: Slot) -> bool {
        self.toks
            .iter()
            .any(|t| matches!(t, Tok::Var { slot: Some(x), .. } if *x == s))
    }

    /// The variables replay needs that the format lacks (empty: usable).
    pub fn missing(&self) -> Missing {
        let mut out = vec![];
        if !(self.has(Slot::Msec) || self.has(Slot::TimeLocal) || self.has(Slot::TimeIso8601)) {
            out.push("a time ($msec, $time_local or $time_iso8601)");
        }
        for s in [
            Slot::RequestTime,
            Slot::Status,
            Slot::UpstreamAddr,
            Slot::UpstreamStatus,
            Slot::UpstreamResponseTime,
        ] {
            if !self.has(s) {
                out.push(s.var());
            }
        }
        Missing(out)
    }

    /// Whether lines carry the connect or header time of each attempt.
    pub fn has_attempt_timing(&self) -> (bool, bool) {
        (
            self.has(Slot::UpstreamConnectTime),
            self.has(Slot::UpstreamHeaderTime),
        )
    }

    /// Matches a line; `None` if it does not have the format's shape.
    pub fn parse<'a>(&self, line: &'a str) -> Option<Fields<'a>> {
        let mut f = Fields::default();
        let mut tries = 0;
        self.at(line, 0, 0, &mut f, &mut tries).then_some(f)
    }

    fn at<'a>(
        &self,
        line: &'a str,
        pos: usize,
        k: usize,
        f: &mut Fields<'a>,
        tries: &mut usize,
    ) -> bool {
        *tries += 1;
        if *tries > MAX_TRIES {
            return false;
        }
        let rest = &line[pos..];
        let Some(tok) = self.toks.get(k) else {
            return rest.trim_end().is_empty();
        };
        match tok {
            Tok::Lit(s) => {
                rest.starts_with(s.as_str()) && self.at(line, pos + s.len(), k + 1, f, tries)
            }
            Tok::Var { slot, shape, .. } => {
                let next = match self.toks.get(k + 1) {
                    Some(Tok::Lit(s)) => Some(s.as_str()),
                    _ => None,
                };
                let set = |f: &mut Fields<'a>, len: usize| {
                    if let Some(s) = slot {
                        f.values[*s as usize] = Some(&rest[..len]);
                    }
                };
                match shape {
                    Shape::TimeLocal => {
                        let len = 26.min(rest.len());
                        if len < 26 || !rest.is_char_boundary(len) {
                            return false;
                        }
                        set(f, len);
                        self.at(line, pos + len, k + 1, f, tries)
                    }
                    Shape::List => {
                        let stop = next.and_then(|l| l.bytes().next());
                        let len = list_len(rest, stop);
                        set(f, len);
                        self.at(line, pos + len, k + 1, f, tries)
                    }
                    Shape::Text => match next {
                        None if k + 1 == self.toks.len() => {
                            let len = rest.trim_end().len();
                            set(f, len);
                            true
                        }
                        None => {
                            // Two variables in a row: this one ends at a space.
                            let len = rest.find(' ').unwrap_or(rest.len());
                            set(f, len);
                            self.at(line, pos + len, k + 1, f, tries)
                        }
                        Some(lit) => {
                            let mut from = 0;
                            while let Some(i) = rest[from..].find(lit) {
                                let len = from + i;
                                set(f, len);
                                if self.at(line, pos + len, k + 1, f, tries) {
                                    return true;
                                }
                                if *tries > MAX_TRIES {
                                    return false;
                                }
                                from = len + lit.len().max(1);
                                while from < rest.len() && !rest.is_char_boundary(from) {
                                    from += 1;
                                }
                                if from > rest.len() {
                                    break;
                                }
                            }
                            false
                        }
                    },
                }
            }
        }
    }
}

/// The length of an `$upstream_*` list at the start of `s`: items without
/// spaces, commas, quotes or the first character of the literal after it
/// (`stop`), joined by `", "` or `" : "`.
fn list_len(s: &str, stop: Option<u8>) -> usize {
    let b = s.as_bytes();
    let item = |from: usize| {
        b[from..]
            .iter()
            .take_while(|&&c| !matches!(c, b' ' | b',' | b'"') && Some(c) != stop)
            .count()
    };
    let mut end = item(0);
    if end == 0 {
        return 0;
    }
    loop {
        let sep = if b[end..].starts_with(b", ") {
            2
        } else if b[end..].starts_with(b" : ") {
            3
        } else {
            return end;
        };
        let n = item(end + sep);
        if n == 0 {
            return end;
        }
        end += sep + n;
    }
}

/// nginx's built-in `combined` format (ngx_http_log_module.c).
pub const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";

/// The formats tried when none is named: (name, format).
pub const PRESETS: [(&str, &str); 4] = [
    (
        "ingress-nginx",
        "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id",
    ),
    (
        "upstream-timing",
        "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" rt=$request_time uct=\"$upstream_connect_time\" uht=\"$upstream_header_time\" urt=\"$upstream_response_time\" ua=\"$upstream_addr\" us=\"$upstream_status\"",
    ),
    (
        "calibration",
        "$msec $request_time \"$request\" $status \"$upstream_addr\" \"$upstream_status\" \"$upstream_response_time\"",
    ),
    ("combined", COMBINED),
];

/// The presets, compiled.
pub fn presets() -> Vec<LogFormat> {
    PRESETS
        .iter()
        .map(|(n, t)| LogFormat::compile(n, "preset", t).expect("presets compile"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> LogFormat {
        presets().into_iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn ingress_nginx_lines_read_their_space_separated_lists() {
        let f = preset("ingress-nginx");
        let line = "10.0.0.9 - - [01/Dec/2026:20:00:01 +0000] \"GET /a b HTTP/1.1\" 502 0 \"-\" \"curl/8\" 80 0.012 [default-api-80] [] 10.1.0.5:8080, 10.1.0.6:8080 0, 12 0.001, 0.011 502, 200 abc123";
        let v = f.parse(line).expect("matches");
        assert_eq!(
            v.get(Slot::UpstreamAddr),
            Some("10.1.0.5:8080, 10.1.0.6:8080")
        );
        assert_eq!(v.get(Slot::UpstreamResponseTime), Some("0.001, 0.011"));
        assert_eq!(v.get(Slot::UpstreamStatus), Some("502, 200"));
        assert_eq!(v.get(Slot::UpstreamName), Some("default-api-80"));
        assert_eq!(v.get(Slot::Request), Some("GET /a b HTTP/1.1"));
        assert_eq!(v.get(Slot::TimeLocal), Some("01/Dec/2026:20:00:01 +0000"));
        assert!(f.missing().0.is_empty());
    }

    #[test]
    fn upstream_groups_joined_by_colons_stay_one_value() {
        let f = preset("upstream-timing");
        let line = "1.2.3.4 - - [01/Dec/2026:20:00:01 +0000] \"POST /x HTTP/1.1\" 200 5 \"-\" \"ua \\x22q\\x22\" rt=0.020 uct=\"0.000, 0.001 : 0.000\" uht=\"-, 0.010 : 0.005\" urt=\"0.003, 0.011 : 0.006\" ua=\"10.0.0.1:80, 10.0.0.2:80 : 10.0.1.1:80\" us=\"502, 504 : 200\"";
        let v = f.parse(line).expect("matches");
        assert_eq!(
            v.get(Slot::UpstreamAddr),
            Some("10.0.0.1:80, 10.0.0.2:80 : 10.0.1.1:80")
        );
        assert_eq!(v.get(Slot::UpstreamHeaderTime), Some("-, 0.010 : 0.005"));
        assert_eq!(v.get(Slot::RequestTime), Some("0.020"));
    }

    #[test]
    fn combined_is_known_but_lacks_the_upstream_fields() {
        let f = preset("combined");
        let line =
            "1.2.3.4 - - [01/Dec/2026:20:00:01 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl\"";
        assert!(f.parse(line).is_some());
        let m = f.missing().to_string();
        assert!(
            m.contains("$request_time") && m.contains("$upstream_addr"),
            "{m}"
        );
        assert!(preset("calibration").parse(line).is_none());
    }

    #[test]
    fn braces_and_bad_formats() {
        let f = LogFormat::compile("x", "t", "${msec}|$status").unwrap();
        let v = f.parse("12.5|200").unwrap();
        assert_eq!(v.get(Slot::Msec), Some("12.5"));
        assert!(LogFormat::compile("x", "t", "no vars").is_err());
        assert!(LogFormat::compile("x", "t", "${msec").is_err());
        assert!(f.parse("12.5 200").is_none());
        let f = LogFormat::compile("x", "t", "$status|$upstream_addr|$upstream_status").unwrap();
        let v = f.parse("200|10.0.0.1:80, 10.0.0.2:80|502, 200").unwrap();
        assert_eq!(v.get(Slot::UpstreamAddr), Some("10.0.0.1:80, 10.0.0.2:80"));
        assert_eq!(v.get(Slot::UpstreamStatus), Some("502, 200"));
    }
}
