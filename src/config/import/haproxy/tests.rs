use super::time;
use crate::config::Loc;
use crate::config::import::{Imported, Options, Workload, read};
use crate::engine::SimDuration;
use serde_json::Value;
use std::path::Path;

fn import(text: &str, target: Option<&str>) -> Result<Imported, String> {
    // One directory per text: tests run in parallel.
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    let dir = std::env::temp_dir().join(format!(
        "hcsim-haproxy-{}-{}-{hash:x}",
        std::process::id(),
        text.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("haproxy.cfg");
    std::fs::write(&p, text).unwrap();
    let opts = Options {
        target: target.map(String::from),
        ..Options::default()
    };
    read(&p, &opts, &Workload::default()).map_err(|e| e.to_string())
}

fn model(im: &Imported) -> Value {
    serde_json::to_value(im.model().unwrap().effective_spec()).unwrap()
}

#[test]
fn times_are_milliseconds_by_default() {
    let at = Loc::new(Path::new("h.cfg"), 1);
    assert_eq!(time("500", &at).unwrap(), SimDuration::from_millis(500));
    assert_eq!(time("2s", &at).unwrap(), SimDuration::from_secs(2));
    assert_eq!(time("1m", &at).unwrap(), SimDuration::from_secs(60));
    assert_eq!(time("100us", &at).unwrap(), SimDuration::from_micros(100));
    assert!(time("1.5s", &at).is_err());
}

#[test]
fn a_backend_inherits_the_last_defaults_or_the_named_one() {
    let text = "defaults base\n retries 5\n timeout connect 1s\ndefaults\n retries 2\n option redispatch 2\nbackend a\n server s1 10.0.0.1:80\nbackend b from base\n no option redispatch\n server s1 10.0.0.1:80 weight 0\n server s2 10.0.0.2:80\n";
    let a = model(&import(text, Some("a")).unwrap());
    assert_eq!(a["gateway"]["haproxy"]["retries"], 2);
    assert_eq!(a["gateway"]["haproxy"]["redispatch"], 2);
    assert_eq!(a["policy"]["kind"], "none");
    let im = import(text, Some("b")).unwrap();
    let b = model(&im);
    assert_eq!(b["gateway"]["haproxy"]["retries"], 5);
    assert_eq!(b["gateway"]["haproxy"]["redispatch"], false);
    assert_eq!(b["gateway"]["haproxy"]["timeout_connect"], "1s");
    assert_eq!(b["nodes"][0]["down"], true);
    assert!(
        im.warnings[0]
            .to_string()
            .contains("haproxy.cfg:11: weight 0")
    );
}

#[test]
fn checks_take_default_server_then_the_server_line() {
    let im = import(
        "global\n spread-checks 10\ndefaults\n timeout check 300ms\nlisten l\n bind :80\n balance random\n option httpchk\n default-server inter 3s rise 1\n server a 10.0.0.1:80 check fall 4 observe layer4 on-error sudden-death error-limit 2\n server b 10.0.0.2:80 check fall 4 observe layer4 on-error sudden-death error-limit 2 maxconn 50\n",
        None,
    )
    .unwrap();
    let m = model(&im);
    let p = &m["policy"];
    assert_eq!(p["flavor"], "haproxy");
    assert_eq!(p["probe"], "http");
    assert_eq!(p["inter"], "3s");
    assert_eq!((p["rise"].as_u64(), p["fall"].as_u64()), (Some(1), Some(4)));
    assert_eq!(p["observe"], "layer4");
    assert_eq!(p["on_error"], "sudden-death");
    assert_eq!(p["error_limit"], 2);
    assert_eq!(p["timeout_check"], "300ms");
    assert_eq!(p["spread_checks"], 10);
    assert_eq!(m["gateway"]["balancer"], "random_two");
    assert_eq!(m["nodes"][1]["max_conns"], 50);
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
}

#[test]
fn malformed_lines_name_their_line() {
    let e = import("backend b\n server s1\n", None).unwrap_err();
    assert!(
        e.ends_with(
            "haproxy.cfg:2: `server` needs a name and an address: server NAME ADDRESS [params]"
        ),
        "{e}"
    );
    let e = import("  retries 3\nbackend b\n", None).unwrap_err();
    assert!(
        e.contains("haproxy.cfg:1: unknown keyword \"retries\" out of a section"),
        "{e}"
    );
}

fn origin(im: &Imported, field: &str) -> Option<usize> {
    im.origins
        .iter()
        .rev()
        .find(|(f, _)| f == field)
        .map(|(_, at)| at.line)
}

const HC: &str = "backend b\n option httpchk GET /health\n";
const SRV: &str = " server s1 10.0.0.1:80 check\n";

fn with(rules: &str) -> String {
    format!("{HC}{rules}{SRV}")
}

/// `parse_tcpcheck_expect` and `tcpcheck_eval_expect_http`: the status
/// rules are read with their line; none leaves the default.
#[test]
fn http_check_expect_status_rules_are_read_with_their_line() {
    for (rules, want) in [
        (
            " http-check expect status 200-399,404\n",
            serde_json::json!([{"status": ["200-399", "404"]}]),
        ),
        (
            " http-check expect rstatus ^[23]\n",
            serde_json::json!([{"rstatus": "^[23]"}]),
        ),
        (
            " http-check expect ! status 500-599\n",
            serde_json::json!([{"status": ["500-599"], "negate": true}]),
        ),
        (
            " http-check expect min-recv 3 !rstatus ^5 comment \"no 5xx\"\n",
            serde_json::json!([{"rstatus": "^5", "negate": true}]),
        ),
        // A node answers 100–599: a range past it is cut.
        (
            " http-check expect status 200-999\n",
            serde_json::json!([{"status": ["200-599"]}]),
        ),
        // Nothing a node answers matches: every check fails.
        (
            " http-check expect status 600-999\n",
            serde_json::json!([{"status": ["100-599"], "negate": true}]),
        ),
    ] {
        let im = import(&with(rules), None).unwrap();
        assert!(im.warnings.is_empty(), "{rules}: {:?}", im.warnings);
        let m = model(&im);
        assert_eq!(m["policy"]["expect"], want, "{rules}");
        assert_eq!(origin(&im, "policy.expect"), Some(3), "{rules}");
    }
    let m = model(&import(&with(""), None).unwrap());
    assert!(m["policy"].get("expect").is_none(), "the default: {m}");
}

/// A section with `option httpchk` or `http-check` rules builds its own
/// ruleset (`proxy_parse_httpchk_opt`, `proxy_parse_httpcheck`); one
/// without inherits its defaults' rules.
#[test]
fn http_check_rules_come_from_the_nearest_section_that_has_some() {
    let text = "defaults\n option httpchk\n http-check expect status 200\nbackend a\n server s1 10.0.0.1:80 check\nbackend b\n option httpchk GET /\n server s1 10.0.0.1:80 check\nbackend c\n http-check expect status 204\n server s1 10.0.0.1:80 check\n";
    let im = import(text, Some("a")).unwrap();
    assert_eq!(
        model(&im)["policy"]["expect"],
        serde_json::json!([{"status": ["200"]}])
    );
    assert_eq!(origin(&im, "policy.expect"), Some(3));
    let b = model(&import(text, Some("b")).unwrap());
    assert!(b["policy"].get("expect").is_none(), "{b}");
    let c = model(&import(text, Some("c")).unwrap());
    assert_eq!(
        c["policy"]["expect"],
        serde_json::json!([{"status": ["204"]}])
    );
}

#[test]
fn body_and_header_matches_pass_a_2xx_or_3xx_answer() {
    let im = import(
        &with(" http-check expect status 200\n http-check expect string OK\n"),
        None,
    )
    .unwrap();
    assert_eq!(
        model(&im)["policy"]["expect"],
        serde_json::json!([{"status": ["200"]}, {"status": ["200-399"]}])
    );
    assert_eq!(im.warnings.len(), 1, "{:?}", im.warnings);
    let w = im.warnings[0].to_string();
    assert!(
        w.contains(":4: http-check expect string \"OK\" is not modelled")
            && w.contains("matching a 2xx or 3xx answer"),
        "{w}"
    );
    // Without a rule on the status HAProxy checks none, but a failing
    // node's page seldom holds what the check looks for.
    let im = import(&with(" http-check expect rstring ^OK\n"), None).unwrap();
    assert_eq!(
        model(&im)["policy"]["expect"],
        serde_json::json!([{"status": ["200-399"]}])
    );
    // A negated body match alone: assumed to pass, so every status does.
    let im = import(&with(" http-check expect ! string error\n"), None).unwrap();
    assert_eq!(
        model(&im)["policy"]["expect"],
        serde_json::json!([{"status": ["100-599"]}])
    );
    assert!(
        im.warnings
            .iter()
            .any(|w| w.to_string().contains("every status passes the check")),
        "{:?}",
        im.warnings
    );
}

#[test]
fn an_expect_before_a_last_send_keeps_the_implicit_rule() {
    let im = import(
        &with(" http-check send meth GET uri /a\n http-check expect status 500\n http-check send meth GET uri /b\n"),
        None,
    )
    .unwrap();
    assert_eq!(
        model(&im)["policy"]["expect"],
        serde_json::json!([{"status": ["500"]}, {"status": ["200-399"]}])
    );
    assert_eq!(origin(&im, "policy.expect"), Some(4));
    assert_eq!(
        origin(&im, "policy.expect[1]"),
        Some(2),
        "the implicit rule comes with option httpchk"
    );
    assert!(
        im.warnings[0]
            .to_string()
            .contains("several http-check send/expect steps"),
        "{:?}",
        im.warnings
    );
}

#[test]
fn http_check_expect_that_haproxy_refuses_or_hcsim_cannot_read() {
    for (rules, want) in [
        (
            " http-check expect status 399-200\n",
            "invalid range of status codes '399-200'",
        ),
        (" http-check expect status 2x0\n", "invalid character 'x'"),
        (
            " http-check expect rstatus ^[23\n",
            "not a valid regular expression",
        ),
        (
            " http-check expect status\n",
            "'status' expects an argument",
        ),
        (
            " http-check expect status 200 rstatus ^2\n",
            "only one pattern expected",
        ),
    ] {
        let e = import(&with(rules), None).unwrap_err();
        assert!(
            e.contains("haproxy.cfg:3: HAProxy 2.6 refuses this file") && e.contains(want),
            "{rules}: {e}"
        );
    }
    let im = import(&with(" http-check expect rstatus (?!5)\n"), None).unwrap();
    assert_eq!(
        model(&im)["policy"]["expect"],
        serde_json::json!([{"status": ["200-399"]}])
    );
    let w = im.warnings[0].to_string();
    assert!(
        w.contains(":3: http-check expect rstatus \"(?!5)\" is not modelled"),
        "{w}"
    );
    // Without `option httpchk` the rules are ignored, as HAProxy does.
    let im = import(
        "backend b\n http-check expect status 200\n server s1 10.0.0.1:80 check\n",
        None,
    )
    .unwrap();
    let m = model(&im);
    assert_eq!(m["policy"]["probe"], "tcp");
    assert!(m["policy"].get("expect").is_none());
    assert!(
        im.warnings[0]
            .to_string()
            .contains("http-check expect has no effect: the checks are not HTTP checks")
    );
}

/// A bad rule set over an imported one (`--set`) is reported at the
/// config line the rule came from.
#[test]
fn an_invalid_expect_over_an_imported_one_names_its_line() {
    let im = import(
        &with(" http-check expect status 200\n http-check expect rstatus ^2\n"),
        None,
    )
    .unwrap();
    for (k, line) in [(0, 3), (1, 4)] {
        let mut doc = im.doc.clone();
        doc["policy"]["expect"][k] = serde_json::json!({"status": ["999"]});
        let e = im
            .model_of(&doc, Path::new("imported model"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "haproxy.cfg:{line}: policy.expect[{k}].status[0]: 999 is not an HTTP status"
            )),
            "{e}"
        );
    }
}
