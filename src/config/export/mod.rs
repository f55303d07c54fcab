//! `hcsim export`: the gateway part of a model as a config snippet, for
//! people (what a tuned model means in their proxy's words) and for
//! harnesses that start a real gateway. Each format writes what it can
//! express and refuses ([`Unsupported`]) a model it cannot: a policy or a
//! setting with no equivalent in that proxy.
//!
//! Nodes become servers at `127.0.0.1:8001`, `:8002`, … unless a node's
//! name is itself an address (`10.0.0.1:8080`, as `hcsim import` names
//! them); [`Options`] can give other addresses.

pub mod caddy;
pub mod envoy;
pub mod haproxy;
pub mod istio;
pub mod kong;
pub mod nginx;
mod pool;
pub mod traefik;

use crate::engine::SimDuration;
use crate::spec::Model;
use std::fmt;

/// A model (or a part of it) that a format cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where the written config points.
#[derive(Clone, Debug)]
pub struct Options {
    /// One address (`HOST:PORT`) per node, in the model's order.
    pub addresses: Vec<String>,
    /// Where the gateway listens (nginx `listen`, an HAProxy frontend's `bind`).
    pub listen: String,
}

impl Options {
    /// The default addresses of `model`'s nodes (see the module doc).
    pub fn of(model: &Model) -> Options {
        Options {
            addresses: model
                .declared_nodes()
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    if is_address(&n.name) {
                        n.name.clone()
                    } else {
                        format!("127.0.0.1:{}", 8001 + i)
                    }
                })
                .collect(),
            listen: "127.0.0.1:8080".into(),
        }
    }
}

/// `Err` unless the model's gateway follows nginx's request path (the
/// request path the nginx, Envoy and Istio exports describe).
pub fn nginx_like(model: &Model) -> Result<(), Unsupported> {
    use crate::spec::GatewayFlavor;
    let (name, to) = match model.gateway.flavor {
        GatewayFlavor::Nginx => return Ok(()),
        GatewayFlavor::Haproxy => ("HAProxy", "--to haproxy"),
        GatewayFlavor::Kong => ("Kong", "--to kong"),
        GatewayFlavor::Linkerd => ("a Linkerd proxy", "the Service's annotations (no export)"),
        GatewayFlavor::Caddy => ("Caddy", "--to caddy"),
        GatewayFlavor::Traefik => ("Traefik", "--to traefik"),
    };
    let flavor = format!("{:?}", model.gateway.flavor).to_lowercase();
    Err(Unsupported(format!(
        "the model's gateway is {name} (`flavor: {flavor}`): export it with {to}"
    )))
}

/// `Err` when a node's checks go to another host (`nodes[].check_addr`,
/// HAProxy's `addr`), which `format`'s export does not write.
pub fn no_check_addr(model: &Model, format: &str) -> Result<(), Unsupported> {
    match model.nodes.iter().find(|n| n.check_addr.is_some()) {
        Some(n) => Err(Unsupported(format!(
            "node {}'s checks go to another host, {} (check_addr): the {format} export \
             writes no separate check address (--to haproxy does)",
            n.name,
            n.check_addr.map(|a| a.to_string()).unwrap_or_default()
        ))),
        None => Ok(()),
    }
}

/// `Err` when a node's checks go to another port (`nodes[].check_port`,
/// HAProxy's `check port N`) or host (`nodes[].check_addr`, HAProxy's
/// `addr`), which `format`'s export does not write.
pub fn no_check_port(model: &Model, format: &str) -> Result<(), Unsupported> {
    no_check_addr(model, format)?;
    match model.nodes.iter().find(|n| n.check_port.is_some()) {
        Some(n) => Err(Unsupported(format!(
            "node {}'s checks go to port {} (check_port): the {format} export writes no \
             separate check port (--to haproxy or --to envoy do)",
            n.name,
            n.check_port.unwrap_or_default()
        ))),
        None => Ok(()),
    }
}

/// `HOST:PORT` with a numeric port.
pub fn is_address(name: &str) -> bool {
    name.rsplit_once(':').is_some_and(|(h, p)| {
        !h.is_empty()
            && p.parse::<u16>().is_ok()
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'))
    })
}

/// A name usable as an nginx upstream or HAProxy backend/server name.
pub fn ident(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "hcsim".into() } else { s }
}

/// A time in the largest unit that writes it exactly, without fractions:
/// `5s`, `300ms`; `units` says which the format has (microseconds last).
fn time(d: SimDuration, micro: Option<&str>) -> Result<String, Unsupported> {
    let us = d.as_micros();
    if us % 1_000_000 == 0 {
        Ok(format!("{}s", us / 1_000_000))
    } else if us % 1_000 == 0 {
        Ok(format!("{}ms", us / 1_000))
    } else {
        match micro {
            Some(u) => Ok(format!("{us}{u}")),
            None => Err(Unsupported(format!(
                "{d} is not a whole number of milliseconds"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_recognised() {
        assert!(is_address("10.0.0.1:8080"));
        assert!(is_address("backend.example.com:80"));
        assert!(!is_address("a"));
        assert!(!is_address("a:b"));
    }

    #[test]
    fn times_take_the_largest_exact_unit() {
        assert_eq!(time(SimDuration::from_secs(60), None).unwrap(), "60s");
        assert_eq!(
            time(SimDuration::from_millis(1500), None).unwrap(),
            "1500ms"
        );
        assert!(time(SimDuration::from_micros(1500), None).is_err());
        assert_eq!(
            time(SimDuration::from_micros(1500), Some("us")).unwrap(),
            "1500us"
        );
    }
}
