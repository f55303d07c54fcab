//! nginx's configuration syntax, as `ngx_conf_read_token` and
//! `ngx_conf_parse` (src/core/ngx_conf_file.c) read it: words separated by
//! whitespace, `"…"` and `'…'` strings with backslash escapes, `#` comments
//! at the start of a word, `;` ending a directive and `{ … }` a block; and
//! `include` (a path relative to the main file's directory, nginx's
//! configuration prefix, with `*` wildcards in the file name).

use super::Loc;
use crate::config::source::{Warning, read_text};
use crate::error::Error;
use std::path::{Path, PathBuf};

/// One directive: `name args… ;` or `name args… { block }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub at: Loc,
    pub block: Option<Vec<Directive>>,
}

impl Directive {
    /// The children of a block directive (none for a simple one).
    pub(crate) fn children(&self) -> &[Directive] {
        self.block.as_deref().unwrap_or(&[])
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Semicolon,
    Open,
    Close,
}

/// Splits `text` into tokens with their line, in one pass. The body of a
/// `*_by_lua_block { … }` is Lua, not nginx syntax: it is skipped by brace
/// matching (Lua strings, long brackets and comments aside), as ngx_lua's
/// own block reader does, and the block comes out empty.
fn tokens(text: &str, file: &Path) -> Result<Vec<(Token, usize)>, Error> {
    let mut out = vec![];
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut line = 1;
    let at = |line| Loc::new(file, line);
    // Whether the next word starts a directive, and whether the current
    // directive's name is a `*_by_lua_block`.
    let mut starts_directive = true;
    let mut lua = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ';' => {
                out.push((Token::Semicolon, line));
                starts_directive = true;
                lua = false;
                i += 1;
            }
            '{' if lua => {
                out.push((Token::Open, line));
                i = skip_lua(&chars, i + 1, &mut line).ok_or_else(|| {
                    at(line).error(
                        "unexpected end of file: expected \"}\" to close this *_by_lua_block",
                    )
                })?;
                out.push((Token::Close, line));
                lua = false;
                starts_directive = true;
            }
            '{' | '}' => {
                out.push((if c == '{' { Token::Open } else { Token::Close }, line));
                starts_directive = true;
                lua = false;
                i += 1;
            }
            '"' | '\'' => {
                let start = line;
                let quote = c;
                let mut word = String::new();
                i += 1;
                loop {
                    let Some(&ch) = chars.get(i) else {
                        return Err(at(start).error(format!(
                            "unexpected end of file: the string opened here has no closing {quote}"
                        )));
                    };
                    i += 1;
                    match ch {
                        '\\' if i < chars.len() => {
                            let next = chars[i];
                            i += 1;
                            match next {
                                'n' => word.push('\n'),
                                't' => word.push('\t'),
                                'r' => word.push('\r'),
                                '"' | '\'' | '\\' => word.push(next),
                                other => {
                                    word.push('\\');
                                    word.push(other);
                                }
                            }
                            if next == '\n' {
                                line += 1;
                            }
                        }
                        ch if ch == quote => break,
                        '\n' => {
                            line += 1;
                            word.push('\n');
                        }
                        ch => word.push(ch),
                    }
                }
                // nginx takes `)` right after a string as the start of the
                // next word (`if ($a = "b") {`).
                if let Some(&next) = chars.get(i)
                    && !(next.is_whitespace() || next == ';' || next == '{' || next == ')')
                {
                    return Err(at(line).error(format!(
                        "unexpected \"{next}\" after a quoted string: expected a space, \";\", \"{{\" or \")\""
                    )));
                }
                if starts_directive {
                    lua = word.ends_with("_by_lua_block");
                }
                starts_directive = false;
                out.push((Token::Word(word), start));
            }
            _ => {
                let mut word = String::new();
                // Whether the word holds `${` (a variable in braces, whose
                // `}` does not end the word): kept as the word grows.
                let mut has_var = false;
                let mut last = '\0';
                while let Some(&ch) = chars.get(i) {
                    if ch.is_whitespace() || ch == ';' || (ch == '{' && last != '$') {
                        break;
                    }
                    if ch == '}' && !(has_var && last != '}') {
                        break;
                    }
                    let pushed = if ch == '\\' && i + 1 < chars.len() {
                        i += 2;
                        chars[i - 1]
                    } else {
                        i += 1;
                        ch
                    };
                    has_var |= last == '$' && pushed == '{';
                    word.push(pushed);
                    last = pushed;
                }
                if starts_directive {
                    lua = word.ends_with("_by_lua_block");
                }
                starts_directive = false;
                out.push((Token::Word(word), line));
            }
        }
    }
    Ok(out)
}

/// Skips a Lua block's body from `i` (just after its `{`) to just after
/// its closing `}`, counting lines; `None` if the file ends first.
fn skip_lua(chars: &[char], mut i: usize, line: &mut usize) -> Option<usize> {
    let mut depth = 1usize;
    // `[[`, `[=[`…: the level of a long bracket opening at `i`, if one does.
    let long = |i: usize| -> Option<usize> {
        if chars.get(i) != Some(&'[') {
            return None;
        }
        let eq = chars[i + 1..].iter().take_while(|&&c| c == '=').count();
        (chars.get(i + 1 + eq) == Some(&'[')).then_some(eq)
    };
    // Skips to just after the `]=…]` closing a long bracket of level `eq`.
    let close_long = |mut i: usize, eq: usize, line: &mut usize| -> Option<usize> {
        while i < chars.len() {
            if chars[i] == '\n' {
                *line += 1;
            }
            if chars[i] == ']'
                && chars[i + 1..].iter().take(eq).all(|&c| c == '=')
                && chars.get(i + 1 + eq) == Some(&']')
            {
                return Some(i + 2 + eq);
            }
            i += 1;
        }
        None
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                *line += 1;
                i += 1;
            }
            '-' if chars.get(i + 1) == Some(&'-') => {
                if let Some(eq) = long(i + 2) {
                    i = close_long(i + 4 + eq, eq, line)?;
                } else {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                }
            }
            '[' if long(i).is_some() => {
                let eq = long(i)?;
                i = close_long(i + 2 + eq, eq, line)?;
            }
            '"' | '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    if chars.get(i) == Some(&'\n') {
                        *line += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            '{' => {
                depth += 1;
                i += 1;
            }
            '}' => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Include nesting beyond this is a cycle (nginx has no limit of its own
/// and would loop until it runs out of file descriptors).
const MAX_INCLUDE_DEPTH: usize = 16;
/// Files read through includes, in all: a pattern included from many
/// places at many levels multiplies (12 levels × 4 files are 16.7 million
/// reads), which depth alone does not bound.
pub(crate) const MAX_INCLUDED_FILES: usize = 10_000;
/// Bytes read through includes, in all.
const MAX_INCLUDED_BYTES: usize = 256 << 20;
/// Blocks nested deeper than this are refused (nginx's contexts nest a few
/// levels: http → server → location → if); the parser keeps its own stack.
pub(crate) const MAX_BLOCK_DEPTH: usize = 100;

/// A parsed configuration: its directives (includes spliced in) and the
/// warnings of reading it (missing includes).
pub(crate) struct Parsed {
    pub directives: Vec<Directive>,
    pub warnings: Vec<Warning>,
}

/// Parses the file `path` whose text is `text`, following its includes.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Parsed, Error> {
    let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut p = Parser {
        base,
        warnings: vec![],
        files: 0,
        bytes: 0,
    };
    let directives = p.file(path, text, 0)?;
    Ok(Parsed {
        directives,
        warnings: p.warnings,
    })
}

struct Parser {
    /// nginx's configuration prefix: the main file's directory.
    base: PathBuf,
    warnings: Vec<Warning>,
    /// Files and bytes read through includes so far.
    files: usize,
    bytes: usize,
}

/// A block being read: its directive, and the children so far.
struct Open {
    name: String,
    args: Vec<String>,
    at: Loc,
    line: usize,
    children: Vec<Directive>,
}

impl Parser {
    /// The directives of one file, read with an explicit stack of open
    /// blocks (no recursion per `{`).
    fn file(&mut self, path: &Path, text: &str, depth: usize) -> Result<Vec<Directive>, Error> {
        let toks = tokens(text, path)?;
        let mut stack: Vec<Open> = vec![];
        let mut out: Vec<Directive> = vec![];
        let mut words: Vec<String> = vec![];
        let mut first_line = 0;
        for (tok, line) in toks.iter() {
            let line = *line;
            let at = Loc::new(path, if words.is_empty() { line } else { first_line });
            match tok {
                Token::Word(w) => {
                    if words.is_empty() {
                        first_line = line;
                    }
                    words.push(w.clone());
                }
                Token::Semicolon => {
                    if words.is_empty() {
                        return Err(at.error("unexpected \";\": expected a directive name"));
                    }
                    let name = words.remove(0);
                    let args = std::mem::take(&mut words);
                    let into = stack.last_mut().map_or(&mut out, |o| &mut o.children);
                    if name == "include" {
                        let included = self.include(&at, &args, depth)?;
                        let into = stack.last_mut().map_or(&mut out, |o| &mut o.children);
                        into.extend(included);
                    } else {
                        into.push(Directive {
                            name,
                            args,
                            at,
                            block: None,
                        });
                    }
                }
                Token::Open => {
                    if words.is_empty() {
                        return Err(
                            at.error("unexpected \"{\": expected a directive name before it")
                        );
                    }
                    if stack.len() >= MAX_BLOCK_DEPTH {
                        return Err(at.error(format!(
                            "blocks nested more than {MAX_BLOCK_DEPTH} deep: nginx's contexts \
                             nest a few levels (http, server, location, if)"
                        )));
                    }
                    let name = words.remove(0);
                    let args = std::mem::take(&mut words);
                    stack.push(Open {
                        name,
                        args,
                        at,
                        line,
                        children: vec![],
                    });
                }
                Token::Close => {
                    if let Some(w) = words.first() {
                        return Err(at.error(format!(
                            "unexpected \"}}\": expected \";\" or \"{{\" after \"{w}\""
                        )));
                    }
                    let Some(o) = stack.pop() else {
                        return Err(at.error("unexpected \"}\": no block is open"));
                    };
                    let into = stack.last_mut().map_or(&mut out, |o| &mut o.children);
                    into.push(Directive {
                        name: o.name,
                        args: o.args,
                        at: o.at,
                        block: Some(o.children),
                    });
                }
            }
        }
        if let Some(o) = stack.last() {
            let open = o.line;
            return Err(Loc::new(path, toks.last().map_or(open, |t| t.1)).error(format!(
                "unexpected end of file: expected \"}}\" to close the block opened at line {open}"
            )));
        }
        if let Some(w) = words.first() {
            return Err(Loc::new(path, first_line).error(format!(
                "unexpected end of file: expected \";\" or \"{{\" after \"{w}\""
            )));
        }
        Ok(out)
    }

    fn include(
        &mut self,
        at: &Loc,
        args: &[String],
        depth: usize,
    ) -> Result<Vec<Directive>, Error> {
        let [pattern] = args else {
            return Err(at.error(format!(
                "`include` takes one file (or a pattern), found {} arguments",
                args.len()
            )));
        };
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(at.error(format!(
                "includes nested more than {MAX_INCLUDE_DEPTH} deep: does \"{pattern}\" include itself?"
            )));
        }
        let full = super::display_path(&self.base, pattern);
        let files = expand(&full);
        if files.is_empty() {
            if !pattern.contains(['*', '?', '[']) {
                self.warnings.push(at.warning(format!(
                    "include \"{pattern}\": {} not found; its directives are not imported",
                    full.display()
                )));
            }
            return Ok(vec![]);
        }
        let mut out = vec![];
        for f in files {
            self.files += 1;
            if self.files > MAX_INCLUDED_FILES {
                return Err(at.error(format!(
                    "includes read more than {MAX_INCLUDED_FILES} files in all (\"{pattern}\" \
                     here): are files included from many places at many levels?"
                )));
            }
            let text = read_text(&f)?;
            self.bytes += text.len();
            if self.bytes > MAX_INCLUDED_BYTES {
                return Err(at.error(format!(
                    "includes read more than {} MiB in all (\"{pattern}\" here)",
                    MAX_INCLUDED_BYTES >> 20
                )));
            }
            out.extend(self.file(&f, &text, depth + 1)?);
        }
        Ok(out)
    }
}

/// The files a path with `*`/`?` wildcards in its file name names, sorted
/// (as glob(3) sorts them); the path itself if it has none and exists.
fn expand(path: &Path) -> Vec<PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return if path.is_file() {
            vec![path.to_path_buf()]
        } else {
            vec![]
        };
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.is_file()
                        && p.file_name().is_some_and(|n| {
                            let n = n.to_string_lossy();
                            !n.starts_with('.') && wildcard(&name, &n)
                        })
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Shell wildcard match: `*` any run, `?` one character.
fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Vec<Directive>, String> {
        parse(Path::new("t.conf"), text)
            .map(|p| p.directives)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_directives_blocks_strings_and_comments() {
        let d = parse_str(
            "worker_processes 4; # four\nhttp {\n  upstream u {\n    server \"10.0.0.1:80\" weight=2;\n  }\n  log_format x '$remote_addr \\'q\\'';\n}\n",
        )
        .unwrap();
        assert_eq!(d[0].name, "worker_processes");
        assert_eq!(d[0].args, ["4"]);
        assert_eq!(d[0].at.line, 1);
        let http = d[1].children();
        assert_eq!(http[0].name, "upstream");
        assert_eq!(http[0].at.line, 3);
        let server = &http[0].children()[0];
        assert_eq!(server.args, ["10.0.0.1:80", "weight=2"]);
        assert_eq!(server.at.line, 4);
        assert_eq!(http[1].args, ["x", "$remote_addr 'q'"]);
    }

    #[test]
    fn variables_in_braces_stay_one_word() {
        let d = parse_str("set $a ${b}c;\nreturn 200 \"${a}\";\n").unwrap();
        assert_eq!(d[0].args, ["$a", "${b}c"]);
    }

    #[test]
    fn malformed_syntax_names_the_line_and_what_was_expected() {
        let cases = [
            (
                "http {\n  server {\n",
                "t.conf:2: unexpected end of file: expected \"}\" to close the block opened at line 2",
            ),
            (
                "worker_processes 4\n",
                "t.conf:1: unexpected end of file: expected \";\" or \"{\" after \"worker_processes\"",
            ),
            ("a b;\n}\n", "t.conf:2: unexpected \"}\": no block is open"),
            (
                "http {\n  server\n}\n",
                "t.conf:2: unexpected \"}\": expected \";\" or \"{\" after \"server\"",
            ),
            (
                ";\n",
                "t.conf:1: unexpected \";\": expected a directive name",
            ),
            (
                "a \"b;\n",
                "t.conf:1: unexpected end of file: the string opened here has no closing \"",
            ),
            (
                "a \"b\"c;\n",
                "t.conf:1: unexpected \"c\" after a quoted string: expected a space, \";\", \"{\" or \")\"",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_str(text).unwrap_err(), want, "{text}");
        }
    }

    #[test]
    fn a_paren_after_a_string_starts_a_word_as_in_nginx() {
        let d = parse_str(
            "location / {\n  if ($http_accept = \"application/activity+json\") {\n    return 404;\n  }\n}\n",
        )
        .unwrap();
        let iff = &d[0].children()[0];
        assert_eq!(iff.name, "if");
        assert_eq!(
            iff.args,
            ["($http_accept", "=", "application/activity+json", ")"]
        );
    }

    #[test]
    fn lua_blocks_are_skipped_by_brace_matching() {
        let d = parse_str(
            "location / {\n  content_by_lua_block {\n    local t = { a = \"}\" } -- } in a comment\n    ngx.say(#t, [[ { ]], '}')\n  }\n  set_by_lua_block $x { return \"{\" }\n  proxy_pass http://u;\n}\n",
        )
        .unwrap();
        let loc = d[0].children();
        assert_eq!(loc[0].name, "content_by_lua_block");
        assert_eq!(loc[0].children(), &[]);
        assert_eq!(loc[1].args, ["$x"]);
        assert_eq!(loc[2].name, "proxy_pass");
        assert_eq!(loc[2].at.line, 7);
        assert!(
            parse_str("access_by_lua_block {\n  if x then\n")
                .unwrap_err()
                .contains("to close this *_by_lua_block")
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        let text = "a {\n".repeat(100_000);
        let e = parse_str(&text).unwrap_err();
        assert!(
            e.starts_with("t.conf:101: blocks nested more than 100 deep"),
            "{e}"
        );
        let ok = format!("{}{}", "a {\n".repeat(100), "}\n".repeat(100));
        assert!(parse_str(&ok).is_ok());
    }

    #[test]
    fn wildcards_match_like_glob() {
        assert!(wildcard("*.conf", "a.conf"));
        assert!(wildcard("a?.conf", "ab.conf"));
        assert!(!wildcard("*.conf", "a.conf.bak"));
        assert!(wildcard("*", "x"));
    }
}
