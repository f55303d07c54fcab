//! `cookie NAME insert` persistence and `option persist` (a backend's
//! `gateway.haproxy.cookie`), with the servers' `cookie VALUE`s.

use super::super::{Draft, Loc};
use super::Backend;
use crate::error::Error;
use serde_json::{Map, Value, json};

/// `cookie NAME [insert|rewrite|prefix] [options]` (`proxy_parse_cookie`,
/// src/cfgparse-listen.c): the name when the mode is `insert`; `rewrite` and
/// `prefix` need the application to set the cookie, which hcsim's nodes do
/// not, so they are warned about and leave the backend without persistence.
/// The options that change no server choice are read silently; `maxidle`,
/// `maxlife` and `postonly` are warned about.
pub(super) fn cookie_line(
    name: &str,
    opts: &[&str],
    at: &Loc,
    d: &mut Draft,
) -> Result<Option<(String, Loc)>, Error> {
    let mut mode = "rewrite";
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            m @ ("insert" | "rewrite" | "prefix") => mode = m,
            "indirect" | "nocache" | "httponly" | "secure" | "preserve" | "dynamic" => {}
            "domain" | "attr" => i += 1,
            o @ ("maxidle" | "maxlife") => {
                d.warn(
                    at,
                    format!("cookie {o} is not modelled: a client's cookie never expires"),
                );
                i += 1;
            }
            "postonly" => d.warn(
                at,
                "cookie postonly is not modelled: the cookie is set on every answer (hcsim's \
                 requests have no method)",
            ),
            o => return Err(at.error(format!("cookie: unknown option \"{o}\""))),
        }
        i += 1;
    }
    if mode != "insert" {
        d.warn(
            at,
            format!(
                "`cookie {name} {mode}` is not modelled (the application sets the cookie in \
                 {mode} mode, and hcsim's nodes set none): every request is balanced by \
                 `balance` alone"
            ),
        );
        return Ok(None);
    }
    Ok(Some((name.to_string(), at.clone())))
}

impl Backend {
    /// `gateway.haproxy.cookie` from `cookie NAME insert`, `option persist`
    /// and the servers' `cookie VALUE`s; its client keys.
    pub(super) fn finish_cookie(&mut self, d: &mut Draft) {
        let Some((name, at)) = self.cookie.take() else {
            if let Some(at) = &self.persist {
                d.warn(
                    at,
                    "option persist without `cookie … insert` changes nothing",
                );
            }
            return;
        };
        let values: Map<String, Value> = self
            .servers
            .iter()
            .filter_map(|(n, p, _)| p.cookie.as_ref().map(|v| (n.clone(), json!(v))))
            .collect();
        if values.is_empty() {
            d.warn(
                &at,
                "no server has a `cookie` value: the cookie is never set, every request is \
                 balanced (the model has no persistence)",
            );
            return;
        }
        let c = json!({"name": name, "persist": self.persist.is_some(), "values": values});
        self.haproxy.insert("cookie".into(), c);
        d.origin("gateway.haproxy.cookie", &at);
        if let Some(p) = &self.persist {
            d.origin("gateway.haproxy.cookie.persist", p);
        }
        for (n, p, at) in &self.servers {
            if p.cookie.is_some() {
                d.origin(&format!("gateway.haproxy.cookie.values.{n}"), at);
            }
        }
        d.client_keys
            .get_or_insert(super::super::nginx::IMPORTED_KEYS);
    }
}
