//! The Caddyfile's syntax, as `caddyconfig/caddyfile` lexes and groups it:
//! tokens separated by whitespace, `"quoted"` and `` `backquoted` `` tokens,
//! `#` comments at the start of a token, a `\` at the end of a line joining
//! it with the next; a line is a directive and its arguments, and a `{` that
//! ends it opens its block, closed by a `}` alone. Snippets (`(name) {…}`)
//! are expanded where `import name` names them.

use super::Loc;
use crate::error::Error;
use std::path::Path;

/// One token and its line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Token {
    pub text: String,
    pub line: usize,
    /// Written in quotes (so `{` is a word, not a brace).
    pub quoted: bool,
}

/// A directive: its words and, if it opened one, its block.
#[derive(Clone, Debug)]
pub(super) struct Directive {
    pub words: Vec<Token>,
    pub block: Option<Vec<Directive>>,
}

impl Directive {
    pub(super) fn name(&self) -> &str {
        self.words.first().map_or("", |t| t.text.as_str())
    }
    pub(super) fn line(&self) -> usize {
        self.words.first().map_or(1, |t| t.line)
    }
    pub(super) fn args(&self) -> &[Token] {
        self.words.get(1..).unwrap_or(&[])
    }
}

/// Splits the text into lines of tokens (a line ends at a newline that is
/// not escaped and not inside quotes).
fn lex(path: &Path, text: &str) -> Result<Vec<Vec<Token>>, Error> {
    let mut lines: Vec<Vec<Token>> = vec![];
    let mut cur: Vec<Token> = vec![];
    let cs: Vec<char> = text.chars().collect();
    let (mut i, mut line) = (0, 1);
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\n' => {
                if !cur.is_empty() {
                    lines.push(std::mem::take(&mut cur));
                }
                line += 1;
                i += 1;
            }
            '\\' if cs.get(i + 1) == Some(&'\n') => {
                line += 1;
                i += 2;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                while i < cs.len() && cs[i] != '\n' {
                    i += 1;
                }
            }
            '"' | '`' => {
                let (start_line, q) = (line, c);
                let mut s = String::new();
                i += 1;
                loop {
                    match cs.get(i) {
                        None => {
                            return Err(Loc::new(path, start_line)
                                .error(format!("unterminated {q}quoted{q} token")));
                        }
                        Some(&d) if d == q => {
                            i += 1;
                            break;
                        }
                        Some('\\') if q == '"' && matches!(cs.get(i + 1), Some('"' | '\\')) => {
                            s.push(cs[i + 1]);
                            i += 2;
                        }
                        Some(&d) => {
                            if d == '\n' {
                                line += 1;
                            }
                            s.push(d);
                            i += 1;
                        }
                    }
                }
                cur.push(Token {
                    text: s,
                    line: start_line,
                    quoted: true,
                });
            }
            _ => {
                let mut s = String::new();
                while i < cs.len() && !cs[i].is_whitespace() {
                    s.push(cs[i]);
                    i += 1;
                }
                cur.push(Token {
                    text: s,
                    line,
                    quoted: false,
                });
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    Ok(lines)
}

fn is_open(t: &Token) -> bool {
    !t.quoted && t.text == "{"
}
fn is_close(t: &Token) -> bool {
    !t.quoted && t.text == "}"
}

/// Groups the lines into directives and blocks.
/// `opened`: the line of the `{` whose block this is (none at the top).
fn group(
    path: &Path,
    lines: &[Vec<Token>],
    at: &mut usize,
    opened: Option<usize>,
) -> Result<Vec<Directive>, Error> {
    let mut out = vec![];
    while *at < lines.len() {
        let mut words = lines[*at].clone();
        *at += 1;
        if words.len() == 1 && is_close(&words[0]) {
            if opened.is_none() {
                return Err(Loc::new(path, words[0].line).error("unexpected `}`"));
            }
            return Ok(out);
        }
        let opens = words.last().is_some_and(is_open);
        if opens {
            words.pop();
        }
        if let Some(t) = words.iter().find(|t| is_open(t) || is_close(t)) {
            return Err(Loc::new(path, t.line).error(format!(
                "`{}` must end a line (or stand alone on one)",
                t.text
            )));
        }
        let block = if opens {
            let first = lines[*at - 1].last().map_or(1, |t| t.line);
            Some(group(path, lines, at, Some(first))?)
        } else {
            None
        };
        if words.is_empty() {
            // A block with no key: the global options.
            out.push(Directive {
                words: vec![],
                block,
            });
        } else {
            out.push(Directive { words, block });
        }
    }
    if let Some(l) = opened {
        return Err(Loc::new(path, l).error("this block is never closed (missing `}`)"));
    }
    Ok(out)
}

/// The directives of a Caddyfile, with snippets expanded.
pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<Directive>, Error> {
    let lines = lex(path, text)?;
    let mut at = 0;
    let top = group(path, &lines, &mut at, None)?;
    let snippets: Vec<(String, Vec<Directive>)> = top
        .iter()
        .filter_map(|d| {
            let n = d.name();
            (n.starts_with('(') && n.ends_with(')') && d.words.len() == 1).then(|| {
                (
                    n[1..n.len() - 1].to_string(),
                    d.block.clone().unwrap_or_default(),
                )
            })
        })
        .collect();
    let rest: Vec<Directive> = top
        .into_iter()
        .filter(|d| !(d.name().starts_with('(') && d.name().ends_with(')')))
        .collect();
    Ok(expand(rest, &snippets, 0))
}

fn expand(
    ds: Vec<Directive>,
    snippets: &[(String, Vec<Directive>)],
    depth: usize,
) -> Vec<Directive> {
    let mut out = vec![];
    for mut d in ds {
        if d.name() == "import"
            && depth < 8
            && let Some(s) = d
                .args()
                .first()
                .and_then(|a| snippets.iter().find(|(n, _)| *n == a.text))
        {
            out.extend(expand(s.1.clone(), snippets, depth + 1));
            continue;
        }
        if let Some(b) = d.block.take() {
            d.block = Some(expand(b, snippets, depth));
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_sites_directives_and_blocks_with_their_lines() {
        let text = "{\n  admin off\n}\n(common) {\n  lb_retries 2\n}\n:8080, example.com {\n  # comment\n  reverse_proxy /api* 10.0.0.1:80 \"10.0.0.2:80\" {\n    import common\n    health_uri /h\n  }\n}\n";
        let ds = parse(Path::new("Caddyfile"), text).unwrap();
        assert_eq!(ds.len(), 2, "global options and one site");
        assert!(ds[0].words.is_empty());
        let site = &ds[1];
        assert_eq!(site.name(), ":8080,");
        let rp = &site.block.as_ref().unwrap()[0];
        assert_eq!(rp.name(), "reverse_proxy");
        assert_eq!(rp.line(), 9);
        assert_eq!(rp.args()[2].text, "10.0.0.2:80");
        let sub: Vec<&str> = rp
            .block
            .as_ref()
            .unwrap()
            .iter()
            .map(|d| d.name())
            .collect();
        assert_eq!(sub, ["lb_retries", "health_uri"], "the snippet is expanded");
        assert_eq!(
            rp.block.as_ref().unwrap()[0].line(),
            5,
            "where the snippet says it"
        );
    }

    #[test]
    fn unbalanced_braces_name_the_line() {
        let e = parse(
            Path::new("Caddyfile"),
            ":80 {\n  reverse_proxy a:1 {\n    lb_retries 1\n}\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("Caddyfile:1"), "{e}");
        assert!(e.to_string().contains("never closed"), "{e}");
        let e = parse(Path::new("Caddyfile"), ":80 {\n}\n}\n").unwrap_err();
        assert!(e.to_string().contains("Caddyfile:3"), "{e}");
    }
}
