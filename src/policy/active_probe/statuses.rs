//! Which HTTP statuses pass a check: a set over 100–599 built from
//! HAProxy's `http-check expect [!] status|rstatus` rules or Envoy's
//! `expected_statuses` / `retriable_statuses` ranges, and the small regular
//! expression matcher `rstatus` needs.
//!
//! HAProxy 2.6 (`src/tcpcheck.c`, `tcpcheck_eval_expect_http`):
//! `TCPCHK_EXPECT_HTTP_STATUS` passes when the status is in one of the
//! inclusive ranges `parse_tcpcheck_expect` read from `200-399,404`;
//! `TCPCHK_EXPECT_HTTP_STATUS_REGEX` runs `regex_exec2` (PCRE2, unanchored:
//! a match anywhere) over the status line's three-digit code; `!` inverts
//! either (`match ^ inverse`). Every expect rule of the check must pass.
//! Without one, `check_proxy_tcpcheck` adds `http-check expect status
//! 200-399` after the last `send`.
//!
//! Envoy (`HttpHealthCheckerImpl::HttpStatusChecker`): `[start, end)`
//! ranges, `100 <= start < end <= 600`; none given: only 200.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The statuses a model's nodes can give.
pub const LOWEST: u16 = 100;
pub const HIGHEST: u16 = 599;

/// A set of HTTP statuses in 100–599.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusSet([u64; 8]);

impl StatusSet {
    pub const EMPTY: StatusSet = StatusSet([0; 8]);

    /// `lo..=hi`, clipped to 100–599.
    pub fn range(lo: u16, hi: u16) -> StatusSet {
        let mut s = StatusSet::EMPTY;
        for x in lo.max(LOWEST)..=hi.min(HIGHEST) {
            s.insert(x);
        }
        s
    }

    pub fn all() -> StatusSet {
        StatusSet::range(LOWEST, HIGHEST)
    }

    fn insert(&mut self, s: u16) {
        let i = (s - LOWEST) as usize;
        self.0[i / 64] |= 1 << (i % 64);
    }

    pub fn contains(&self, s: u16) -> bool {
        if !(LOWEST..=HIGHEST).contains(&s) {
            return false;
        }
        let i = (s - LOWEST) as usize;
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn union(self, o: StatusSet) -> StatusSet {
        StatusSet(std::array::from_fn(|k| self.0[k] | o.0[k]))
    }

    pub fn intersect(self, o: StatusSet) -> StatusSet {
        StatusSet(std::array::from_fn(|k| self.0[k] & o.0[k]))
    }

    /// The statuses of 100–599 not in the set.
    pub fn complement(self) -> StatusSet {
        let all = StatusSet::all();
        StatusSet(std::array::from_fn(|k| !self.0[k] & all.0[k]))
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The set as inclusive ranges, lowest first.
    pub fn ranges(&self) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = vec![];
        for s in LOWEST..=HIGHEST {
            if !self.contains(s) {
                continue;
            }
            match out.last_mut() {
                Some((_, hi)) if *hi + 1 == s => *hi = s,
                _ => out.push((s, s)),
            }
        }
        out
    }
}

/// One `http-check expect` rule on the status, as a model writes it:
/// exactly one of `status` and `rstatus`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HaproxyExpect {
    /// `status`: codes and inclusive ranges, each `"404"` or `"200-399"`
    /// (HAProxy's comma-separated list, one item per entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<String>>,
    /// `rstatus`: a regular expression searched for in the three-digit
    /// status (`^[23]`, `^(2|3)[0-9][0-9]`, `200|404`): literals, `.`,
    /// classes, groups, alternation, anchors, `\d`/`\w`/`\s` and
    /// quantifiers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rstatus: Option<String>,
    /// `!`: the rule passes when the status does not match.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub negate: bool,
}

/// One item of a `status` list: `"404"` or `"200-399"`.
pub fn parse_status_item(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("expected a status or a range such as \"200-399\", found \"{s}\"");
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a, b),
        None => (s, s),
    };
    let num = |x: &str| -> Result<u16, String> {
        if x.is_empty() || !x.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        x.parse().map_err(|_| bad())
    };
    let (a, b) = (num(a)?, num(b)?);
    for x in [a, b] {
        if !(LOWEST..=HIGHEST).contains(&x) {
            return Err(format!("{x} is not an HTTP status (100–599), in \"{s}\""));
        }
    }
    if a > b {
        return Err(format!(
            "the range \"{s}\" is empty: its start is above its end"
        ));
    }
    Ok((a, b))
}

impl HaproxyExpect {
    /// The statuses that pass this rule, or `(field, why)` for a model
    /// error (`field` relative to the rule).
    pub fn passing(&self) -> Result<StatusSet, (String, String)> {
        let set = match (&self.status, &self.rstatus) {
            (Some(list), None) => {
                if list.is_empty() {
                    return Err(("status".into(), "must list at least one status".into()));
                }
                let mut set = StatusSet::EMPTY;
                for (i, item) in list.iter().enumerate() {
                    let (a, b) =
                        parse_status_item(item).map_err(|e| (format!("status[{i}]"), e))?;
                    set = set.union(StatusSet::range(a, b));
                }
                set
            }
            (None, Some(re)) => {
                let r = Regex::parse(re).map_err(|e| ("rstatus".into(), e.to_string()))?;
                r.statuses()
            }
            (Some(_), Some(_)) => {
                return Err((
                    "status".into(),
                    "give `status` or `rstatus`, not both (one `http-check expect` rule each)"
                        .into(),
                ));
            }
            (None, None) => {
                return Err((
                    "status".into(),
                    "a rule needs `status` (a list such as [\"200-399\"]) or `rstatus` (a \
                     regular expression)"
                        .into(),
                ));
            }
        };
        Ok(if self.negate { set.complement() } else { set })
    }
}

/// The statuses that pass every rule of `rules`; no rules: HAProxy's
/// implicit `http-check expect status 200-399`.
pub fn haproxy_passing(rules: &[HaproxyExpect]) -> Result<StatusSet, (String, String)> {
    if rules.is_empty() {
        return Ok(StatusSet::range(200, 399));
    }
    let mut set = StatusSet::all();
    for (i, r) in rules.iter().enumerate() {
        let s = r
            .passing()
            .map_err(|(f, e)| (format!("expect[{i}].{f}"), e))?;
        set = set.intersect(s);
    }
    Ok(set)
}

/// Envoy's `type.v3.Int64Range` of statuses: `start` included, `end` not.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusRange {
    pub start: u16,
    pub end: u16,
}

/// The statuses in `ranges`, or `(field, why)`: each must have
/// `100 <= start < end <= 600` (`HttpStatusChecker::validateRange`).
/// No ranges: `default`.
pub fn envoy_ranges(
    field: &str,
    ranges: &[StatusRange],
    default: StatusSet,
) -> Result<StatusSet, (String, String)> {
    if ranges.is_empty() {
        return Ok(default);
    }
    let mut set = StatusSet::EMPTY;
    for (i, r) in ranges.iter().enumerate() {
        let f = format!("{field}[{i}]");
        if r.start >= r.end {
            return Err((
                f,
                format!(
                    "an empty range: start ({}) must be below end ({}), which is excluded",
                    r.start, r.end
                ),
            ));
        }
        if r.start < LOWEST {
            return Err((
                f,
                format!(
                    "start must be an HTTP status (at least 100), found {}",
                    r.start
                ),
            ));
        }
        if r.end > HIGHEST + 1 {
            return Err((
                f,
                format!(
                    "end must be at most 600 (it is excluded: 600 ends at 599), found {}",
                    r.end
                ),
            ));
        }
        set = set.union(StatusSet::range(r.start, r.end - 1));
    }
    Ok(set)
}

/// Why a regular expression is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegexError {
    /// Not a valid expression (HAProxy refuses it too).
    Invalid(String),
    /// Valid PCRE that this matcher does not read.
    Unsupported(String),
}

impl std::fmt::Display for RegexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegexError::Invalid(w) => write!(f, "not a valid regular expression: {w}"),
            RegexError::Unsupported(w) => write!(
                f,
                "{w} is beyond hcsim's status matcher (literals, `.`, classes, groups, `|`, `^`, \
                 `$`, `\\d`/`\\w`/`\\s` and quantifiers)"
            ),
        }
    }
}

/// A parsed expression.
#[derive(Clone, Debug)]
enum Node {
    /// Matches one character.
    Class(Vec<(char, char)>, bool),
    Start,
    End,
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, u32, Option<u32>),
}

/// A regular expression over a status code (PCRE syntax, the subset real
/// configs use), matched anywhere in it as `regex_exec2` does.
#[derive(Clone, Debug)]
pub struct Regex(Node);

impl Regex {
    pub fn parse(src: &str) -> Result<Regex, RegexError> {
        let chars: Vec<char> = src.chars().collect();
        let mut p = Parser { c: &chars, i: 0 };
        let n = p.alt()?;
        if p.i < chars.len() {
            // Only a `)` stops `alt` early.
            return Err(RegexError::Invalid(format!(
                "an unmatched `)` at character {}",
                p.i + 1
            )));
        }
        Ok(Regex(n))
    }

    /// Does the expression match somewhere in `s`?
    pub fn is_match(&self, s: &str) -> bool {
        let c: Vec<char> = s.chars().collect();
        (0..=c.len()).any(|start| !ends(&self.0, &c, start).is_empty())
    }

    /// The statuses 100–599 it matches.
    pub fn statuses(&self) -> StatusSet {
        let mut set = StatusSet::EMPTY;
        for s in LOWEST..=HIGHEST {
            if self.is_match(&s.to_string()) {
                set.insert(s);
            }
        }
        set
    }
}

/// Every position where `n` can end a match that starts at `at`.
fn ends(n: &Node, s: &[char], at: usize) -> Vec<usize> {
    let mut out = match n {
        Node::Class(ranges, negated) => match s.get(at) {
            Some(&ch) if ranges.iter().any(|&(a, b)| (a..=b).contains(&ch)) != *negated => {
                vec![at + 1]
            }
            _ => vec![],
        },
        Node::Start => {
            if at == 0 {
                vec![at]
            } else {
                vec![]
            }
        }
        Node::End => {
            if at == s.len() {
                vec![at]
            } else {
                vec![]
            }
        }
        Node::Seq(items) => {
            let mut cur = vec![at];
            for it in items {
                let mut next = vec![];
                for &p in &cur {
                    next.extend(ends(it, s, p));
                }
                next.sort_unstable();
                next.dedup();
                cur = next;
                if cur.is_empty() {
                    break;
                }
            }
            cur
        }
        Node::Alt(options) => options.iter().flat_map(|o| ends(o, s, at)).collect(),
        Node::Repeat(inner, min, max) => {
            // More than `min + len` repetitions reach no new position: all
            // but `len` of them match the empty string, and can be dropped.
            let cap = max
                .unwrap_or(u32::MAX)
                .min(min.saturating_add(s.len() as u32));
            let mut out = vec![];
            let mut cur = vec![at];
            let mut k = 0u32;
            loop {
                if k >= *min {
                    out.extend(cur.iter().copied());
                }
                if k >= cap || cur.is_empty() {
                    break;
                }
                let mut next: Vec<usize> = cur.iter().flat_map(|&p| ends(inner, s, p)).collect();
                next.sort_unstable();
                next.dedup();
                cur = next;
                k += 1;
            }
            out
        }
    };
    out.sort_unstable();
    out.dedup();
    out
}

struct Parser<'a> {
    c: &'a [char],
    i: usize,
}

const DIGIT: (char, char) = ('0', '9');

fn word() -> Vec<(char, char)> {
    vec![DIGIT, ('a', 'z'), ('A', 'Z'), ('_', '_')]
}

fn space() -> Vec<(char, char)> {
    vec![('\t', '\r'), (' ', ' ')]
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn alt(&mut self) -> Result<Node, RegexError> {
        let mut options = vec![self.seq()?];
        while self.peek() == Some('|') {
            self.i += 1;
            options.push(self.seq()?);
        }
        Ok(if options.len() == 1 {
            options.pop().expect("one option")
        } else {
            Node::Alt(options)
        })
    }

    fn seq(&mut self) -> Result<Node, RegexError> {
        let mut items = vec![];
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let atom = self.quantified(atom)?;
            items.push(atom);
        }
        Ok(Node::Seq(items))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, RegexError> {
        let (min, max) = match self.peek() {
            Some(c @ ('*' | '+' | '?')) => {
                self.i += 1;
                match c {
                    '*' => (0, None),
                    '+' => (1, None),
                    _ => (0, Some(1)),
                }
            }
            Some('{') => match self.braces() {
                Some(b) => b,
                // PCRE reads a `{` that starts no quantifier as a literal.
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        if matches!(atom, Node::Start | Node::End) {
            return Err(RegexError::Unsupported("a quantified anchor".into()));
        }
        match self.peek() {
            // Lazy: the same set of matches.
            Some('?') => self.i += 1,
            Some('+') => {
                return Err(RegexError::Unsupported(
                    "a possessive quantifier (`*+`, `++`, `?+`)".into(),
                ));
            }
            Some('*') => {
                return Err(RegexError::Invalid(format!(
                    "nothing to repeat at character {}",
                    self.i + 1
                )));
            }
            _ => {}
        }
        if let Some(m) = max
            && m < min
        {
            return Err(RegexError::Invalid(format!(
                "numbers out of order in a {{{min},{m}}} quantifier"
            )));
        }
        Ok(Node::Repeat(Box::new(atom), min, max))
    }

    /// `{n}`, `{n,}`, `{n,m}` at `self.i`: moves past it.
    fn braces(&mut self) -> Option<(u32, Option<u32>)> {
        let rest: String = self.c[self.i..].iter().collect();
        let close = rest.find('}')?;
        let body = &rest[1..close];
        let num = |x: &str| -> Option<u32> {
            (!x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
                .then(|| x.parse().ok())
                .flatten()
        };
        let r = match body.split_once(',') {
            None => {
                let n = num(body)?;
                (n, Some(n))
            }
            Some((a, "")) => (num(a)?, None),
            Some((a, b)) => (num(a)?, Some(num(b)?)),
        };
        self.i += rest[..=close].chars().count();
        Some(r)
    }

    fn atom(&mut self) -> Result<Node, RegexError> {
        let c = self.peek().expect("seq checked");
        let at = self.i + 1;
        self.i += 1;
        Ok(match c {
            '^' => Node::Start,
            '$' => Node::End,
            // Any character but a line feed (no `s` flag).
            '.' => Node::Class(vec![('\n', '\n')], true),
            '*' | '+' | '?' => {
                return Err(RegexError::Invalid(format!(
                    "nothing to repeat at character {at}"
                )));
            }
            '(' => {
                if self.peek() == Some('?') {
                    if self.c.get(self.i + 1) == Some(&':') {
                        self.i += 2;
                    } else {
                        let what: String = self.c[self.i - 1..].iter().take(3).collect();
                        return Err(RegexError::Unsupported(format!(
                            "the group `{what}…` (lookaround, a named group or flags)"
                        )));
                    }
                }
                let inner = self.alt()?;
                if self.peek() != Some(')') {
                    return Err(RegexError::Invalid(format!(
                        "the `(` at character {at} is not closed"
                    )));
                }
                self.i += 1;
                inner
            }
            '[' => self.class(at)?,
            '\\' => {
                let (ranges, negated) = self.escape(false)?;
                Node::Class(ranges, negated)
            }
            c => Node::Class(vec![(c, c)], false),
        })
    }

    /// After a `\`: the class it stands for.
    fn escape(&mut self, in_class: bool) -> Result<(Vec<(char, char)>, bool), RegexError> {
        let Some(e) = self.peek() else {
            return Err(RegexError::Invalid("a `\\` ends the expression".into()));
        };
        self.i += 1;
        Ok(match e {
            'd' => (vec![DIGIT], false),
            'D' => (vec![DIGIT], true),
            'w' => (word(), false),
            'W' => (word(), true),
            's' => (space(), false),
            'S' => (space(), true),
            't' => (vec![('\t', '\t')], false),
            'n' => (vec![('\n', '\n')], false),
            'r' => (vec![('\r', '\r')], false),
            e if e.is_ascii_alphanumeric() => {
                let what = if e.is_ascii_digit() && !in_class {
                    format!("the back-reference `\\{e}`")
                } else {
                    format!("the escape `\\{e}`")
                };
                return Err(RegexError::Unsupported(what));
            }
            // An escaped punctuation character is itself.
            e => (vec![(e, e)], false),
        })
    }

    /// After a `[`: the class up to its `]`.
    fn class(&mut self, at: usize) -> Result<Node, RegexError> {
        let negated = self.peek() == Some('^');
        if negated {
            self.i += 1;
        }
        let mut ranges = vec![];
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(RegexError::Invalid(format!(
                    "the `[` at character {at} is not closed"
                )));
            };
            self.i += 1;
            // A `]` first is a literal.
            if c == ']' && !first {
                break;
            }
            first = false;
            if c == '[' && self.peek() == Some(':') {
                return Err(RegexError::Unsupported(
                    "a POSIX class such as `[:digit:]`".into(),
                ));
            }
            let lo = if c == '\\' {
                let (r, neg) = self.escape(true)?;
                if neg || r.len() != 1 || r[0].0 != r[0].1 {
                    if neg {
                        return Err(RegexError::Unsupported(
                            "a negated escape (`\\D`, `\\W`, `\\S`) in a class".into(),
                        ));
                    }
                    ranges.extend(r);
                    continue;
                }
                r[0].0
            } else {
                c
            };
            // `a-z`; a `-` before the `]` is a literal.
            if self.peek() == Some('-') && self.c.get(self.i + 1).is_some_and(|&n| n != ']') {
                self.i += 1;
                let mut hi = self.peek().expect("checked");
                self.i += 1;
                if hi == '\\' {
                    let (r, neg) = self.escape(true)?;
                    if neg || r.len() != 1 || r[0].0 != r[0].1 {
                        return Err(RegexError::Invalid(
                            "a class range ends in a class escape".into(),
                        ));
                    }
                    hi = r[0].0;
                }
                if hi < lo {
                    return Err(RegexError::Invalid(format!(
                        "the range `{lo}-{hi}` in a class is out of order"
                    )));
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Node::Class(ranges, negated))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(re: &str) -> Vec<(u16, u16)> {
        Regex::parse(re).unwrap().statuses().ranges()
    }

    /// `tcpcheck_eval_expect_http`, `TCPCHK_EXPECT_HTTP_STATUS_REGEX`:
    /// `regex_exec2` searches the three-digit code, unanchored.
    #[test]
    fn rstatus_searches_the_code_as_pcre_does() {
        assert_eq!(set("^[23]"), [(200, 399)]);
        assert_eq!(set("^(2|3)[0-9][0-9]"), [(200, 399)]);
        assert_eq!(set("^(2|3)[0-9][0-9]$"), [(200, 399)]);
        assert_eq!(set("^2\\d\\d$"), [(200, 299)]);
        assert_eq!(set("^(?:200|301)$"), [(200, 200), (301, 301)]);
        // Unanchored: `2` matches any code with a 2 in it.
        let two = Regex::parse("2").unwrap().statuses();
        assert!(two.contains(200) && two.contains(502) && two.contains(120));
        assert!(!two.contains(503));
        // Measured on HAProxy 2.6.12 (a server answering 503 to every
        // check, inter 300ms fall 1): UP under `rstatus 0` and `status
        // 200-399,503`; DOWN under `rstatus ^[23]` and `! status 500-599`.
        assert!(Regex::parse("0").unwrap().statuses().contains(503));
        assert!(!Regex::parse("^[23]").unwrap().statuses().contains(503));
        assert_eq!(set("^[^5]"), [(100, 499)]);
        assert_eq!(set("^[2-3][0-9]{2}$"), [(200, 399)]);
        assert_eq!(set("^2.."), [(200, 299)]);
        assert_eq!(set("^20[04]$"), [(200, 200), (204, 204)]);
        assert_eq!(set("^(200|404)$"), [(200, 200), (404, 404)]);
        assert_eq!(set("^[23]0*"), [(200, 399)]);
        assert_eq!(set("^2[0-9]+$"), [(200, 299)]);
        assert_eq!(set("^2[0-9]?$"), Vec::<(u16, u16)>::new());
        assert_eq!(set("^5{2}"), [(550, 559)]);
        assert_eq!(set("^(20|30)[0-9]"), [(200, 209), (300, 309)]);
        assert_eq!(set("x"), Vec::<(u16, u16)>::new());
        assert_eq!(
            set(""),
            [(100, 599)],
            "the empty expression matches everything"
        );
    }

    #[test]
    fn rstatus_refuses_what_it_cannot_read_and_what_is_not_a_regex() {
        for bad in ["(2", "[23", "*2", "2**", "^[3-2]", "2{3,1}", "\\"] {
            assert!(
                matches!(Regex::parse(bad), Err(RegexError::Invalid(_))),
                "{bad}"
            );
        }
        for beyond in ["(?=2)", "(2)\\1", "(?i)2", "2*+", "[[:digit:]]", "\\b2"] {
            assert!(
                matches!(Regex::parse(beyond), Err(RegexError::Unsupported(_))),
                "{beyond}"
            );
        }
    }

    /// `parse_tcpcheck_expect`'s `TCPCHK_EXPECT_HTTP_STATUS` list and
    /// `tcpcheck_eval_expect_http`'s inclusive ranges, inverted by `!`.
    #[test]
    fn status_lists_are_inclusive_ranges_and_negate_inverts() {
        let r = |status: &[&str], negate| HaproxyExpect {
            status: Some(status.iter().map(|s| s.to_string()).collect()),
            rstatus: None,
            negate,
        };
        let s = r(&["200-399", "404"], false).passing().unwrap();
        assert!(s.contains(200) && s.contains(399) && s.contains(404));
        assert!(!s.contains(400) && !s.contains(503));
        let s = r(&["500-599"], true).passing().unwrap();
        assert_eq!(s.ranges(), [(100, 499)]);
        assert_eq!(
            haproxy_passing(&[]).unwrap().ranges(),
            [(200, 399)],
            "check_proxy_tcpcheck's implicit rule"
        );
        assert_eq!(
            haproxy_passing(&[r(&["200-499"], false), r(&["404"], true)])
                .unwrap()
                .ranges(),
            [(200, 403), (405, 499)],
            "every rule must pass"
        );
        let e = r(&["399-200"], false).passing().unwrap_err();
        assert_eq!(e.0, "status[0]");
        let e = r(&["200", "99"], false).passing().unwrap_err();
        assert_eq!(e.0, "status[1]");
        assert!(e.1.contains("100–599"), "{}", e.1);
        let e = r(&[], false).passing().unwrap_err();
        assert_eq!(e.0, "status");
    }

    /// `HttpStatusChecker`: `[start, end)`, `validateRange`'s bounds, only
    /// 200 by default.
    #[test]
    fn envoy_ranges_exclude_their_end() {
        let d = StatusSet::range(200, 200);
        let r = |start, end| StatusRange { start, end };
        assert_eq!(envoy_ranges("x", &[], d).unwrap(), d);
        let s = envoy_ranges("x", &[r(200, 400)], d).unwrap();
        assert_eq!(s.ranges(), [(200, 399)]);
        assert_eq!(
            envoy_ranges("x", &[r(100, 600)], d).unwrap(),
            StatusSet::all()
        );
        for (bad, why) in [
            (r(200, 200), "empty"),
            (r(300, 200), "empty"),
            (r(99, 200), "at least 100"),
            (r(200, 601), "at most 600"),
        ] {
            let e = envoy_ranges("expected_statuses", &[r(200, 201), bad], d).unwrap_err();
            assert_eq!(e.0, "expected_statuses[1]");
            assert!(e.1.contains(why), "{}", e.1);
        }
    }
}
