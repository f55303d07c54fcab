//! A Kubernetes `Service` with Linkerd's annotations, as the policy
//! controller reads them (`linkerd/linkerd2`,
//! `policy-controller/k8s/index/src/outbound/index.rs`:
//! `parse_accrual_config`, `parse_consecutive_params`,
//! `parse_success_rate_params`, `parse_timeouts`, `parse_duration`):
//! `balancer.linkerd.io/failure-accrual` and its `-consecutive-*` settings,
//! the unified mode's `balancer.alpha.linkerd.io/failure-accrual-success-rate-*`
//! → the `linkerd` policy; `timeout.linkerd.io/response` →
//! `gateway.linkerd.response_timeout`. The target is the Service's name;
//! the endpoints are not in the file, so the model gets `--nodes N`
//! (default 3) nodes. A value the controller cannot parse makes it drop the
//! Service's failure accrual: here it is an error naming the line.

use super::yaml::{self, Lines};
use super::{Draft, Format, Options, choose};
use crate::config::Loc;
use crate::engine::SimDuration;
use crate::error::Error;
use serde_json::{Map, Value, json};
use std::path::Path;

const MODE: &str = "balancer.linkerd.io/failure-accrual";
const CONSECUTIVE: &str = "balancer.linkerd.io/failure-accrual-consecutive-";
const SUCCESS_RATE: &str = "balancer.alpha.linkerd.io/failure-accrual-success-rate";

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let docs = yaml::documents(path, text)?;
    let lines = Lines::new(path, text);
    let (services, names) = yaml::named(&docs, &lines, &["Service"], "/metadata/name", "name");
    let i = choose(
        &names,
        &|_| "Service".into(),
        opts.target.as_deref(),
        Format::Linkerd,
        path,
    )?;
    let (svc, name) = (services[i], names[i].0.clone());
    let mut d = Draft::default();
    let top = lines.at(lines.key_value(svc.line, "kind", "Service"));
    d.gateway("flavor", json!("linkerd"), &top);
    d.default_nodes(
        opts.nodes.unwrap_or(3),
        &names[i].1,
        "a Service does not list its endpoints",
    );
    let empty = Map::new();
    let ann = svc
        .value
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let anchor = lines.path(svc.line, &["metadata", "annotations"]);
    let at = |k: &str| lines.at(lines.key(anchor, k));
    let get = |k: &str| -> Result<Option<(String, Loc)>, Error> {
        match ann.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some((s.trim().to_string(), at(k)))),
            Some(Value::Number(n)) => Ok(Some((n.to_string(), at(k)))),
            Some(Value::Bool(b)) => Ok(Some((b.to_string(), at(k)))),
            Some(v) => Err(at(k).error(format!("{k}: expected a string, found {v}"))),
        }
    };
    for other in docs
        .iter()
        .filter(|x| x.value.get("kind").and_then(Value::as_str) == Some("ServiceProfile"))
    {
        d.warn(
            &lines.at(other.line),
            "a ServiceProfile is in the file: Linkerd's docs say failure accrual does not apply \
             to a Service that has one; the model follows the annotations",
        );
    }
    let mut linkerd = Map::new();
    if let Some((t, a)) = get("timeout.linkerd.io/response")? {
        let t = duration(&t).map_err(|e| a.error(format!("timeout.linkerd.io/response: {e}")))?;
        if !t.is_zero() {
            linkerd.insert("response_timeout".into(), json!(t));
            d.origin("gateway.linkerd.response_timeout", &a);
        }
    }
    for k in ann.keys() {
        let a = at(k);
        match k.as_str() {
            "timeout.linkerd.io/request" | "timeout.linkerd.io/idle" => {
                d.warn(&a, format!("{k} is not modelled"))
            }
            k if k.starts_with("retry.linkerd.io/") => d.warn(
                &a,
                format!("{k} is not modelled: the model's proxy does not retry"),
            ),
            "balancer.alpha.linkerd.io/failure-accrual-honor-retry-after" => d.warn(
                &a,
                format!("{k} is not modelled (the proxy does not act on it: `try_backoff`)"),
            ),
            k if k.starts_with("balancer.alpha.linkerd.io/penalize-failures")
                || k.starts_with("balancer.alpha.linkerd.io/load-biaser") =>
            {
                d.warn(
                    &a,
                    format!(
                        "{k} is not modelled: the balancer weighs endpoints by peak-EWMA alone"
                    ),
                )
            }
            _ => {}
        }
    }
    if !linkerd.is_empty() {
        d.gateway("linkerd", Value::Object(linkerd), &top);
    }
    match get(MODE)? {
        None => {
            d.policy(json!({"kind": "none"}), &top);
            d.notes
                .push("The Service has no failure-accrual annotation: no breaker.".into());
            if ann
                .keys()
                .any(|k| k.starts_with(CONSECUTIVE) || k.starts_with(SUCCESS_RATE))
            {
                d.warn(
                    &top,
                    format!("failure-accrual settings without `{MODE}` have no effect"),
                );
            }
        }
        Some((mode, a)) => {
            let policy = accrual(&mode, &a, ann, &get, &mut d)?;
            d.policy(policy, &a);
        }
    }
    Ok((d, name))
}

type Get<'a> = dyn Fn(&str) -> Result<Option<(String, Loc)>, Error> + 'a;

/// `parse_accrual_config` → the `linkerd` policy.
fn accrual(
    mode: &str,
    at: &Loc,
    ann: &Map<String, Value>,
    get: &Get,
    d: &mut Draft,
) -> Result<Value, Error> {
    let mut p = Map::new();
    p.insert("kind".into(), json!("linkerd"));
    let unified = match mode {
        "consecutive" => false,
        "unified" => true,
        other => {
            return Err(at.error(format!(
                "{MODE}: expected consecutive or unified, found \"{other}\" (`unsupported failure \
                 accrual mode`)"
            )));
        }
    };
    p.insert("failure_accrual".into(), json!(mode));
    let mut field = |name: &str, v: Value, loc: &Loc, d: &mut Draft| {
        p.insert(name.into(), v);
        d.origin(&format!("policies[0].{name}"), loc);
    };
    for (suffix, name) in [
        ("max-failures", "max_failures"),
        ("min-penalty", "min_penalty"),
        ("max-penalty", "max_penalty"),
        ("jitter-ratio", "jitter_ratio"),
    ] {
        let key = format!("{CONSECUTIVE}{suffix}");
        let Some((v, a)) = get(&key)? else {
            continue;
        };
        let value = match suffix {
            "max-failures" => json!(v.parse::<u32>().map_err(|_| {
                a.error(format!("{key}: expected a whole number, found \"{v}\""))
            })?),
            "jitter-ratio" => json!(
                v.parse::<f32>()
                    .map_err(|_| a.error(format!("{key}: expected a number, found \"{v}\"")))?
                    as f64
            ),
            _ => json!(duration(&v).map_err(|e| a.error(format!("{key}: {e}")))?),
        };
        field(name, value, &a, d);
    }
    let sr_keys: Vec<&String> = ann.keys().filter(|k| k.starts_with(SUCCESS_RATE)).collect();
    if !unified {
        for k in sr_keys {
            d.warn(
                &get(k)?.map(|x| x.1).unwrap_or_else(|| at.clone()),
                format!(
                    "{k} has no effect under failure-accrual consecutive (only unified reads it)"
                ),
            );
        }
        return Ok(Value::Object(p));
    }
    for k in &sr_keys {
        if !matches!(
            &k[SUCCESS_RATE.len()..],
            "-threshold" | "-window" | "-min-requests"
        ) {
            let a = get(k)?.map(|x| x.1).unwrap_or_else(|| at.clone());
            d.warn(
                &a,
                format!("{k} is not an annotation the controller reads: it has no effect"),
            );
        }
    }
    for (suffix, name) in [
        ("-threshold", "success_rate_threshold"),
        ("-window", "success_rate_window"),
        ("-min-requests", "success_rate_min_requests"),
    ] {
        let key = format!("{SUCCESS_RATE}{suffix}");
        let Some((v, a)) = get(&key)? else {
            continue;
        };
        let value = match suffix {
            "-threshold" => json!(
                v.parse::<f64>()
                    .map_err(|_| a.error(format!("{key}: expected a number, found \"{v}\"")))?
            ),
            "-min-requests" => json!(v.parse::<u32>().map_err(|_| {
                a.error(format!("{key}: expected a whole number, found \"{v}\""))
            })?),
            _ => json!(duration(&v).map_err(|e| a.error(format!("{key}: {e}")))?),
        };
        field(name, value, &a, d);
    }
    Ok(Value::Object(p))
}

/// The controller's `parse_duration`: a whole number and a unit (`ms`,
/// `s`, `m`, `h`, `d`); a bare `0`; no fraction, no sign.
fn duration(s: &str) -> Result<SimDuration, String> {
    if s.starts_with('-') {
        return Err(format!("a duration cannot be negative, found \"{s}\""));
    }
    let split = s
        .rfind(|c: char| c.is_ascii_digit())
        .ok_or_else(|| format!("expected a duration such as 10s, found \"{s}\""))?;
    let (magnitude, unit) = s.split_at(split + 1);
    if magnitude.contains('.') {
        return Err(format!(
            "fractional durations are not supported, found \"{s}\""
        ));
    }
    let n: u64 = magnitude
        .parse()
        .map_err(|_| format!("expected a duration such as 10s, found \"{s}\""))?;
    let ms = match unit {
        "" if n == 0 => 0,
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "" => {
            return Err(format!(
                "missing duration unit, found \"{s}\" (did you mean {n}s or {n}ms?)"
            ));
        }
        _ => {
            return Err(format!(
                "invalid duration unit {unit} (expected ms, s, m, h or d), found \"{s}\""
            ));
        }
    };
    n.checked_mul(ms)
        .map(SimDuration::from_millis)
        .ok_or_else(|| format!("\"{s}\" overflows"))
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Workload, read};
    use super::duration;
    use crate::engine::SimDuration;
    use std::path::PathBuf;

    fn import(name: &str, text: &str) -> Result<super::super::Imported, String> {
        let dir = std::env::temp_dir().join(format!("hcsim-linkerd-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p: PathBuf = dir.join("svc.yaml");
        std::fs::write(&p, text).unwrap();
        read(&p, &Options::default(), &Workload::default()).map_err(|e| e.to_string())
    }

    const SVC: &str = "apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: emojivoto
  annotations:
    balancer.linkerd.io/failure-accrual: unified
    balancer.linkerd.io/failure-accrual-consecutive-max-failures: \"5\"
    balancer.linkerd.io/failure-accrual-consecutive-max-penalty: 30s
    balancer.alpha.linkerd.io/failure-accrual-success-rate-threshold: \"0.9\"
    balancer.alpha.linkerd.io/failure-accrual-success-rate-window: 20s
    balancer.alpha.linkerd.io/failure-accrual-honor-retry-after: \"true\"
    timeout.linkerd.io/response: 2s
spec:
  selector:
    app: web
  ports:
  - port: 80
";

    #[test]
    fn failure_accrual_annotations_become_the_linkerd_policy() {
        let im = import("unified", SVC).unwrap();
        let v = serde_json::to_value(im.model().unwrap().effective_spec()).unwrap();
        assert_eq!(v["gateway"]["flavor"], "linkerd");
        assert_eq!(v["gateway"]["linkerd"]["response_timeout"], "2s");
        assert_eq!(v["policy"]["kind"], "linkerd");
        assert_eq!(v["policy"]["failure_accrual"], "unified");
        assert_eq!(v["policy"]["max_failures"], 5);
        assert_eq!(v["policy"]["max_penalty"], "30s");
        assert_eq!(v["policy"]["min_penalty"], "1s", "the controller's default");
        assert_eq!(v["policy"]["success_rate_threshold"], 0.9);
        assert_eq!(v["policy"]["success_rate_window"], "20s");
        assert_eq!(v["nodes"].as_array().unwrap().len(), 3);
        let w: Vec<String> = im.warnings.iter().map(|w| w.to_string()).collect();
        assert!(w.iter().any(|w| w.contains("svc.yaml:12: balancer.alpha.linkerd.io/failure-accrual-honor-retry-after is not modelled")), "{w:?}");
    }

    #[test]
    fn a_bad_value_names_its_line() {
        let text = SVC.replace("max-penalty: 30s", "max-penalty: 1.5s");
        let e = import("fraction", &text).unwrap_err();
        assert!(e.contains("svc.yaml:9: balancer.linkerd.io/failure-accrual-consecutive-max-penalty: fractional"), "{e}");
        let text = SVC.replace("accrual: unified", "accrual: sometimes");
        let e = import("mode", &text).unwrap_err();
        assert!(
            e.contains("svc.yaml:7:") && e.contains("expected consecutive or unified"),
            "{e}"
        );
    }

    #[test]
    fn durations_as_the_controller_parses_them() {
        assert_eq!(duration("10s"), Ok(SimDuration::from_secs(10)));
        assert_eq!(duration("0"), Ok(SimDuration::ZERO));
        assert_eq!(duration("2m"), Ok(SimDuration::from_secs(120)));
        assert!(duration("5").unwrap_err().contains("missing duration unit"));
        assert!(duration("1.5s").is_err());
        assert!(duration("-1s").is_err());
    }
}
