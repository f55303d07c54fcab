use super::time;
use crate::config::Loc;
use crate::config::import::{Imported, Options, Workload, read};
use crate::engine::SimDuration;
use serde_json::Value;
use std::path::Path;

fn import(text: &str, target: Option<&str>) -> Result<Imported, String> {
    let dir = std::env::temp_dir().join(format!(
        "hcsim-haproxy-{}-{}",
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
