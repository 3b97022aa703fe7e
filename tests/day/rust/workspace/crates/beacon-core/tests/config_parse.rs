use std::time::Duration;

use beacon_core::{CheckKind, Config, Error};

const BASIC: &str = r#"
listen = "0.0.0.0:8080"

[[check]]
id = "homepage"
kind = "http"
url = "https://example.com/"
interval = "30s"

[[check]]
id = "db"
kind = "tcp"
host = "10.0.0.5"
port = 5432
interval = "10s"
timeout = "2s"
"#;

#[test]
fn parses_http_and_tcp_checks() {
    let config = Config::from_toml(BASIC).unwrap();
    assert_eq!(config.listen, "0.0.0.0:8080");
    assert_eq!(config.checks.len(), 2);
    assert_eq!(config.checks[1].timeout, Duration::from_secs(2));
    assert!(matches!(config.checks[1].kind, CheckKind::Tcp { port: 5432, .. }));
}

#[test]
fn rejects_duplicate_ids() {
    let doubled = format!("{BASIC}\n[[check]]\nid = \"db\"\nkind = \"tcp\"\nhost = \"x\"\nport = 1\ninterval = \"1m\"\n");
    let err = Config::from_toml(&doubled).unwrap_err();
    assert!(matches!(err, Error::DuplicateCheck(_)));
}
