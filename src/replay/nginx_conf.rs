//! What an nginx.conf says about its logs: the `log_format` directives
//! (`ngx_http_log_set_format`: a name, an optional `escape=`, then strings
//! joined), read with `hcsim import`'s tokenizer, and the servers of every
//! `upstream` (so that lines for another upstream are told from servers
//! that are in no upstream at all).

use super::format::LogFormat;
use crate::config::import::nginx_syntax::{self, Directive};
use crate::error::Error;
use std::collections::HashMap;
use std::path::Path;

/// The config's formats, and each upstream server's address → its upstream.
pub struct LogConfig {
    pub formats: Vec<LogFormat>,
    pub upstream_of: HashMap<String, String>,
}

fn walk<'a>(ds: &'a [Directive], out: &mut Vec<&'a Directive>) {
    for d in ds {
        out.push(d);
        walk(d.children(), out);
    }
}

/// An address as nginx writes it in `$upstream_addr` (port 80 by default).
pub fn with_port(addr: &str) -> String {
    let host_port = addr.trim_start_matches("unix:");
    if addr.starts_with("unix:")
        || host_port
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok() && !host_port.ends_with(']'))
    {
        addr.to_string()
    } else {
        format!("{addr}:80")
    }
}

pub fn read(path: &Path, text: &str) -> Result<LogConfig, Error> {
    let parsed = nginx_syntax::parse(path, text)?;
    let mut all = vec![];
    walk(&parsed.directives, &mut all);
    let mut formats = vec![];
    let mut upstream_of = HashMap::new();
    for d in all {
        match d.name.as_str() {
            "log_format" => {
                let Some(name) = d.args.first() else {
                    return Err(d.at.error("`log_format` needs a name and a format"));
                };
                let rest: Vec<&str> = d.args[1..]
                    .iter()
                    .map(String::as_str)
                    .skip_while(|a| a.starts_with("escape="))
                    .collect();
                let f = LogFormat::compile(name, &d.at.to_string(), &rest.concat())
                    .map_err(|e| d.at.error(format!("log_format {name}: {e}")))?;
                formats.push(f);
            }
            "upstream" => {
                let name = d.args.first().cloned().unwrap_or_default();
                for s in d.children().iter().filter(|x| x.name == "server") {
                    if let Some(a) = s.args.first() {
                        upstream_of.insert(with_port(a), name.clone());
                    }
                }
            }
            _ => {}
        }
    }
    Ok(LogConfig {
        formats,
        upstream_of,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_upstreams_are_read_from_the_config() {
        let text = "http {\n log_format main '$remote_addr [$time_local] '\n   '\"$request\" $status';\n log_format up escape=json '$msec $status $upstream_addr';\n upstream a { server 10.0.0.1; server 10.0.0.2:8080; }\n upstream b { server 10.0.1.1:80; }\n}\n";
        let c = read(Path::new("n.conf"), text).unwrap();
        assert_eq!(c.formats.len(), 2);
        assert_eq!(
            c.formats[0].text(),
            "$remote_addr [$time_local] \"$request\" $status"
        );
        assert_eq!(c.formats[0].origin, "n.conf:2");
        assert_eq!(c.formats[1].text(), "$msec $status $upstream_addr");
        assert_eq!(c.upstream_of["10.0.0.1:80"], "a");
        assert_eq!(c.upstream_of["10.0.0.2:8080"], "a");
        assert_eq!(c.upstream_of["10.0.1.1:80"], "b");
        assert_eq!(with_port("[::1]:81"), "[::1]:81");
    }
}
