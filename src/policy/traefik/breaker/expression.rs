//! The circuit breaker's trip condition, parsed as Traefik parses it:
//! `vulcand/oxy` `cbreaker.parseExpression` hands the text to
//! `vulcand/predicate`, which reads it with Go's own expression parser
//! (`go/parser.ParseExpr`) and builds the predicate bottom-up:
//!
//! - the functions `NetworkErrorRatio()` (float), `ResponseCodeRatio(a, b,
//!   c, d)` (float, four integer arguments), `LatencyAtQuantileMS(q)` (an
//!   integer, one float argument: `50.0`, not `50`) and `RequestThreshold()`
//!   (an integer; oxy 2.2.0);
//! - a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) has the function on the
//!   left and a literal of the function's type on the right
//!   (`NetworkErrorRatio() > 0.5`; `> 1` is refused, as is `0.5 <
//!   NetworkErrorRatio()`);
//! - `&&` and `||` join comparisons, with Go's precedence (`&&` binds
//!   tighter), and parentheses group; `!`, arithmetic and unary minus are
//!   refused (`vulcand/predicate` has no function for them).
//!
//! Errors carry the column (from 1) where the text stops making sense, as
//! Go's parser reports `1:22: expected operand`.

use std::fmt;

/// A parse or type error at a column of the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

/// A metric the condition reads (`predicates_functions.go`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Metric {
    /// 502 and 504 answers over all answers (0 without any).
    NetworkErrorRatio,
    /// Answers with a status in [a, b) over those in [c, d) (0 when none is).
    ResponseCodeRatio(u16, u16, u16, u16),
    /// The latency quantile `q` (percent) in whole milliseconds.
    LatencyAtQuantileMs(f64),
    /// Answers counted.
    RequestThreshold,
}

impl Metric {
    /// Does it return an integer (else a float)?
    fn is_int(self) -> bool {
        matches!(
            self,
            Metric::LatencyAtQuantileMs(_) | Metric::RequestThreshold
        )
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A literal of the right-hand side.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Lit {
    Int(i64),
    Float(f64),
}

/// The parsed condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Cmp(Metric, Op, Lit),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// The values the metrics have now.
pub trait Values {
    fn float(&mut self, m: Metric) -> f64;
    fn int(&mut self, m: Metric) -> i64;
}

impl Expr {
    /// Evaluates the condition, left to right with short circuits (oxy's
    /// `and`/`or`); `LE` is `lt || eq`, `NEQ` is `!eq`, as in oxy.
    pub fn eval(&self, v: &mut dyn Values) -> bool {
        match self {
            Expr::And(a, b) => a.eval(v) && b.eval(v),
            Expr::Or(a, b) => a.eval(v) || b.eval(v),
            Expr::Cmp(m, op, lit) => match *lit {
                Lit::Int(x) => compare(v.int(*m), *op, x),
                Lit::Float(x) => compare(v.float(*m), *op, x),
            },
        }
    }

    /// Every metric the condition reads.
    pub fn metrics(&self) -> Vec<Metric> {
        match self {
            Expr::Cmp(m, _, _) => vec![*m],
            Expr::And(a, b) | Expr::Or(a, b) => {
                let mut v = a.metrics();
                v.extend(b.metrics());
                v
            }
        }
    }
}

fn compare<T: PartialOrd>(a: T, op: Op, b: T) -> bool {
    match op {
        Op::Eq => a == b,
        Op::Ne => a != b,
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
    }
}

impl fmt::Display for Expr {
    /// Traefik's syntax again (floats keep a decimal point).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Cmp(m, op, lit) => {
                match m {
                    Metric::NetworkErrorRatio => write!(f, "NetworkErrorRatio()")?,
                    Metric::ResponseCodeRatio(a, b, c, d) => {
                        write!(f, "ResponseCodeRatio({a}, {b}, {c}, {d})")?
                    }
                    Metric::LatencyAtQuantileMs(q) => {
                        write!(f, "LatencyAtQuantileMS({})", float(*q))?
                    }
                    Metric::RequestThreshold => write!(f, "RequestThreshold()")?,
                }
                let op = match op {
                    Op::Eq => "==",
                    Op::Ne => "!=",
                    Op::Lt => "<",
                    Op::Le => "<=",
                    Op::Gt => ">",
                    Op::Ge => ">=",
                };
                match lit {
                    Lit::Int(x) => write!(f, " {op} {x}"),
                    Lit::Float(x) => write!(f, " {op} {}", float(*x)),
                }
            }
            Expr::And(a, b) => {
                write_side(f, a, true)?;
                f.write_str(" && ")?;
                write_side(f, b, true)
            }
            Expr::Or(a, b) => write!(f, "{a} || {b}"),
        }
    }
}

/// An `||` inside an `&&` needs its parentheses back.
fn write_side(f: &mut fmt::Formatter<'_>, e: &Expr, in_and: bool) -> fmt::Result {
    match e {
        Expr::Or(..) if in_and => write!(f, "({e})"),
        _ => write!(f, "{e}"),
    }
}

/// A float as Go reads it back as a float literal.
fn float(x: f64) -> String {
    let s = format!("{x}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(String),
    Float(String),
    Str,
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    End,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Int(s) | Tok::Float(s) => format!("`{s}`"),
        Tok::Str => "a string".into(),
        Tok::Op(o) => format!("`{o}`"),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::Comma => "`,`".into(),
        Tok::End => "the end".into(),
    }
}

fn err(column: usize, message: impl Into<String>) -> ExprError {
    ExprError {
        column,
        message: message.into(),
    }
}

/// Splits the text into tokens with their columns.
fn tokens(text: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let cs: Vec<char> = text.chars().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let s = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(cs[s..i].iter().collect()), col));
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && cs.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let s = i;
            let hex = c == '0' && matches!(cs.get(i + 1), Some('x' | 'X'));
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_' || cs[i] == '.') {
                if !hex && matches!(cs[i], 'e' | 'E') && matches!(cs.get(i + 1), Some('+' | '-')) {
                    i += 1;
                }
                i += 1;
            }
            let s: String = cs[s..i].iter().collect();
            let float = !hex && s.contains(['.', 'e', 'E']);
            out.push((if float { Tok::Float(s) } else { Tok::Int(s) }, col));
            continue;
        }
        if c == '"' || c == '`' || c == '\'' {
            let close = cs[i + 1..].iter().position(|&d| d == c);
            match close {
                Some(k) => {
                    i += k + 2;
                    out.push((Tok::Str, col));
                    continue;
                }
                None => return Err(err(col, "string literal not terminated")),
            }
        }
        let two: String = cs[i..(i + 2).min(cs.len())].iter().collect();
        let op = ["&&", "||", "==", "!=", "<=", ">="]
            .into_iter()
            .find(|o| *o == two);
        if let Some(o) = op {
            out.push((Tok::Op(o), col));
            i += 2;
            continue;
        }
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            ',' => Tok::Comma,
            '<' => Tok::Op("<"),
            '>' => Tok::Op(">"),
            '!' => Tok::Op("!"),
            '-' => Tok::Op("-"),
            '+' => Tok::Op("+"),
            '*' => Tok::Op("*"),
            '/' => Tok::Op("/"),
            '%' => Tok::Op("%"),
            '&' => Tok::Op("&"),
            '|' => Tok::Op("|"),
            '=' => {
                return Err(err(
                    col,
                    "`=` is an assignment, not a comparison (use `==`)",
                ));
            }
            _ => return Err(err(col, format!("unexpected character `{c}`"))),
        };
        out.push((tok, col));
        i += 1;
    }
    out.push((Tok::End, cs.len() + 1));
    Ok(out)
}

/// A parsed operand before it is typed: what `vulcand/predicate` holds
/// while it builds the predicate.
#[derive(Clone, Debug)]
enum Node {
    Lit(Lit, usize),
    Call(Metric, usize),
    Pred(Expr),
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> &(Tok, usize) {
        &self.toks[self.at]
    }

    fn bump(&mut self) -> (Tok, usize) {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    /// `a || b`, the loosest.
    fn or(&mut self) -> Result<Node, ExprError> {
        let mut left = self.and()?;
        while let (Tok::Op("||"), col) = self.peek().clone() {
            self.bump();
            let right = self.and()?;
            left = Node::Pred(Expr::Or(
                Box::new(pred(left, col, "||")?),
                Box::new(pred(right, col, "||")?),
            ));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node, ExprError> {
        let mut left = self.cmp()?;
        while let (Tok::Op("&&"), col) = self.peek().clone() {
            self.bump();
            let right = self.cmp()?;
            left = Node::Pred(Expr::And(
                Box::new(pred(left, col, "&&")?),
                Box::new(pred(right, col, "&&")?),
            ));
        }
        Ok(left)
    }

    fn cmp(&mut self) -> Result<Node, ExprError> {
        let mut left = self.unary()?;
        loop {
            let (tok, col) = self.peek().clone();
            let op = match tok {
                Tok::Op("==") => Op::Eq,
                Tok::Op("!=") => Op::Ne,
                Tok::Op("<") => Op::Lt,
                Tok::Op("<=") => Op::Le,
                Tok::Op(">") => Op::Gt,
                Tok::Op(">=") => Op::Ge,
                Tok::Op(o @ ("+" | "-" | "*" | "/" | "%" | "&" | "|")) => {
                    return Err(err(col, format!("`{o}` is not supported")));
                }
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            left = Node::Pred(comparison(left, op, right, col)?);
        }
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        let (tok, col) = self.bump();
        match tok {
            Tok::Op(o @ ("!" | "-" | "+")) => {
                // Parse the operand first: Go's parser accepts the syntax;
                // vulcand/predicate then has no function for the operator.
                self.unary()?;
                Err(err(col, format!("`{o}` is not supported")))
            }
            Tok::LParen => {
                let inner = self.or()?;
                match self.bump() {
                    (Tok::RParen, _) => Ok(inner),
                    (t, c) => Err(err(c, format!("expected `)`, found {}", describe(&t)))),
                }
            }
            Tok::Int(s) => s
                .parse::<i64>()
                .map(|v| Node::Lit(Lit::Int(v), col))
                .map_err(|_| err(col, format!("failed to parse argument: {s}"))),
            Tok::Float(s) => match s.parse::<f64>() {
                Ok(v) if v.is_finite() && !s.contains('_') => Ok(Node::Lit(Lit::Float(v), col)),
                _ => Err(err(col, format!("failed to parse argument: {s}"))),
            },
            Tok::Str => Err(err(col, "string arguments are not supported")),
            Tok::Ident(name) => self.call(name, col),
            t => Err(err(
                col,
                format!("expected an operand, found {}", describe(&t)),
            )),
        }
    }

    /// `NAME(args)`: one of the four functions, its arguments literals.
    fn call(&mut self, name: String, col: usize) -> Result<Node, ExprError> {
        if self.peek().0 != Tok::LParen {
            return Err(err(col, format!("{name} is not defined")));
        }
        self.bump();
        let mut args: Vec<(Lit, usize)> = vec![];
        if self.peek().0 != Tok::RParen {
            loop {
                match self.unary()? {
                    Node::Lit(l, c) => args.push((l, c)),
                    _ => return Err(err(col, "function arguments must be numbers")),
                }
                match self.bump() {
                    (Tok::Comma, _) => continue,
                    (Tok::RParen, _) => break,
                    (t, c) => {
                        return Err(err(
                            c,
                            format!(
                                "expected `,` or `)` in the arguments, found {}",
                                describe(&t)
                            ),
                        ));
                    }
                }
            }
        } else {
            self.bump();
        }
        let ints = |n: usize| -> Result<Vec<i64>, ExprError> {
            if args.len() != n {
                return Err(err(
                    col,
                    format!("{name} takes {n} arguments, found {}", args.len()),
                ));
            }
            args.iter()
                .map(|(l, c)| match l {
                    Lit::Int(v) => Ok(*v),
                    Lit::Float(_) => Err(err(
                        *c,
                        format!("{name} takes integers (`500`, not `500.0`)"),
                    )),
                })
                .collect()
        };
        let m = match name.as_str() {
            "NetworkErrorRatio" => {
                ints(0)?;
                Metric::NetworkErrorRatio
            }
            "RequestThreshold" => {
                ints(0)?;
                Metric::RequestThreshold
            }
            "ResponseCodeRatio" => {
                let v = ints(4)?;
                let code = |k: usize| -> Result<u16, ExprError> {
                    u16::try_from(v[k])
                        .ok()
                        .filter(|&c| c <= 1000)
                        .ok_or_else(|| err(args[k].1, format!("{} is not a status", v[k])))
                };
                Metric::ResponseCodeRatio(code(0)?, code(1)?, code(2)?, code(3)?)
            }
            "LatencyAtQuantileMS" => match args.as_slice() {
                [(Lit::Float(q), c)] => {
                    if !(0.0..=100.0).contains(q) {
                        return Err(err(*c, format!("the quantile is a percentage, found {q}")));
                    }
                    Metric::LatencyAtQuantileMs(*q)
                }
                [(Lit::Int(_), c)] => {
                    return Err(err(
                        *c,
                        "LatencyAtQuantileMS takes a float (`50.0`, not `50`)",
                    ));
                }
                _ => {
                    return Err(err(
                        col,
                        format!("LatencyAtQuantileMS takes 1 argument, found {}", args.len()),
                    ));
                }
            },
            _ => {
                return Err(err(
                    col,
                    format!(
                        "unsupported function: {name} (Traefik has NetworkErrorRatio, \
                         ResponseCodeRatio, LatencyAtQuantileMS and RequestThreshold)"
                    ),
                ));
            }
        };
        Ok(Node::Call(m, col))
    }
}

/// `&&`/`||` take predicates (comparisons or their combinations).
fn pred(n: Node, col: usize, op: &str) -> Result<Expr, ExprError> {
    match n {
        Node::Pred(e) => Ok(e),
        Node::Call(_, c) | Node::Lit(_, c) => Err(err(
            c.min(col),
            format!("`{op}` joins comparisons such as `NetworkErrorRatio() > 0.5`"),
        )),
    }
}

/// A comparison: the function on the left, a literal of its type on the right.
fn comparison(left: Node, op: Op, right: Node, col: usize) -> Result<Expr, ExprError> {
    let m = match left {
        Node::Call(m, _) => m,
        Node::Lit(_, c) => {
            return Err(err(
                c,
                "a comparison needs the function on the left (`NetworkErrorRatio() > 0.5`)",
            ));
        }
        Node::Pred(_) => {
            return Err(err(
                col,
                "comparisons cannot be chained; join them with `&&`",
            ));
        }
    };
    match right {
        Node::Lit(Lit::Int(v), _) if m.is_int() => Ok(Expr::Cmp(m, op, Lit::Int(v))),
        Node::Lit(Lit::Float(v), _) if !m.is_int() => Ok(Expr::Cmp(m, op, Lit::Float(v))),
        Node::Lit(Lit::Int(v), c) => Err(err(
            c,
            format!("expected a float to compare a ratio with (`{v}.0`, not `{v}`)"),
        )),
        Node::Lit(Lit::Float(v), c) => Err(err(
            c,
            format!("expected an integer to compare with, found {v}"),
        )),
        Node::Call(_, c) => Err(err(c, "the right side of a comparison must be a number")),
        Node::Pred(_) => Err(err(
            col,
            "comparisons cannot be chained; join them with `&&`",
        )),
    }
}

/// Parses a trip condition.
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    if text.trim().is_empty() {
        return Err(err(1, "the expression is empty"));
    }
    let mut p = Parser {
        toks: tokens(text)?,
        at: 0,
    };
    let n = p.or()?;
    let (tok, col) = p.peek().clone();
    if tok != Tok::End {
        return Err(err(col, format!("unexpected {}", describe(&tok))));
    }
    match n {
        Node::Pred(e) => Ok(e),
        Node::Call(_, c) | Node::Lit(_, c) => Err(err(
            c,
            "expected a condition (a comparison such as `NetworkErrorRatio() > 0.5`)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_conditions() {
        let e = parse("NetworkErrorRatio() > 0.30").unwrap();
        assert_eq!(
            e,
            Expr::Cmp(Metric::NetworkErrorRatio, Op::Gt, Lit::Float(0.3))
        );
        let e = parse("ResponseCodeRatio(500, 600, 0, 600) > 0.25").unwrap();
        assert_eq!(
            e,
            Expr::Cmp(
                Metric::ResponseCodeRatio(500, 600, 0, 600),
                Op::Gt,
                Lit::Float(0.25)
            )
        );
        let e = parse("LatencyAtQuantileMS(50.0) > 100").unwrap();
        assert_eq!(
            e,
            Expr::Cmp(Metric::LatencyAtQuantileMs(50.0), Op::Gt, Lit::Int(100))
        );
        let e = parse(
            "ResponseCodeRatio(500, 600, 0, 600) > 0.30 || NetworkErrorRatio() > 0.10 && RequestThreshold() >= 10",
        )
        .unwrap();
        // && binds tighter than ||.
        match e {
            Expr::Or(a, b) => {
                assert!(matches!(*a, Expr::Cmp(Metric::ResponseCodeRatio(..), ..)));
                assert!(matches!(*b, Expr::And(..)));
            }
            other => panic!("{other:?}"),
        }
        let e = parse(
            "(NetworkErrorRatio() > 0.5 || NetworkErrorRatio() < 0.1) && RequestThreshold() > 5",
        )
        .unwrap();
        assert!(matches!(e, Expr::And(..)));
        assert_eq!(
            e.to_string(),
            "(NetworkErrorRatio() > 0.5 || NetworkErrorRatio() < 0.1) && RequestThreshold() > 5"
        );
        assert!(parse("NetworkErrorRatio() >= .5").is_ok());
        assert!(parse("NetworkErrorRatio() > 5e-1").is_ok());
    }

    fn col(text: &str) -> (usize, String) {
        let e = parse(text).unwrap_err();
        (e.column, e.message)
    }

    #[test]
    fn errors_name_the_column() {
        let (c, m) = col("NetworkErrorRatio() >");
        assert_eq!(c, 22, "{m}");
        assert!(m.contains("expected an operand"), "{m}");
        assert_eq!(col("NetworkErrorRatio() > 1").0, 23, "an int for a ratio");
        assert_eq!(
            col("LatencyAtQuantileMS(50) > 100").0,
            21,
            "a float quantile"
        );
        assert_eq!(col("LatencyAtQuantileMS(50.0) > 100.5").0, 29);
        assert_eq!(col("0.5 < NetworkErrorRatio()").0, 1);
        assert!(
            col("NetworkErrorRatio()")
                .1
                .contains("expected a condition")
        );
        assert!(col("Foo() > 1").1.contains("unsupported function: Foo"));
        assert!(col("NetworkErrorRatio > 0.5").1.contains("not defined"));
        assert!(
            col("!(NetworkErrorRatio() > 0.5)")
                .1
                .contains("`!` is not supported")
        );
        assert!(
            col("NetworkErrorRatio() > -0.5")
                .1
                .contains("`-` is not supported")
        );
        assert_eq!(col("NetworkErrorRatio() > 0.5 &&").0, 29);
        assert_eq!(col("NetworkErrorRatio() = 0.5").0, 21);
        assert!(
            col("ResponseCodeRatio(500, 600, 0) > 0.5")
                .1
                .contains("4 arguments")
        );
        assert_eq!(col("(NetworkErrorRatio() > 0.5").0, 27);
        assert!(
            col("NetworkErrorRatio() > 0.5 0.3")
                .1
                .contains("unexpected")
        );
        assert!(col("").1.contains("empty"));
        assert!(col("NetworkErrorRatio() > 0.5 > 0.3").1.contains("chained"));
        assert!(col("NetworkErrorRatio() + 1").1.contains("not supported"));
    }

    struct Fixed(f64, i64);
    impl Values for Fixed {
        fn float(&mut self, _: Metric) -> f64 {
            self.0
        }
        fn int(&mut self, _: Metric) -> i64 {
            self.1
        }
    }

    #[test]
    fn evaluates_with_oxys_operators() {
        let e = parse("NetworkErrorRatio() >= 0.5 && RequestThreshold() != 3").unwrap();
        assert!(e.eval(&mut Fixed(0.5, 4)));
        assert!(!e.eval(&mut Fixed(0.5, 3)));
        assert!(!e.eval(&mut Fixed(0.49, 4)));
        let e = parse("LatencyAtQuantileMS(99.0) <= 10 || NetworkErrorRatio() == 1.0").unwrap();
        assert!(e.eval(&mut Fixed(0.0, 10)));
        assert!(e.eval(&mut Fixed(1.0, 11)));
        assert!(!e.eval(&mut Fixed(0.9, 11)));
        assert_eq!(e.metrics().len(), 2);
    }
}
