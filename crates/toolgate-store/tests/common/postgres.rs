//! A real PostgreSQL server for tests: a cluster made in a temporary folder (`initdb`), served on
//! a unix socket in that folder only (no TCP port; [`Cluster::start_tls`] adds a loopback port
//! that speaks TLS), stopped and removed when dropped. As root it
//! runs as `nobody` (PostgreSQL refuses to run as root). Without PostgreSQL installed the tests
//! that need it skip, unless `TOOLGATE_REQUIRE_POSTGRES` is set.

#![allow(unreachable_pub, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A bare connection to `url` (no TLS: the tests' servers speak on a unix socket), and the task
/// that drives it (ends once the client is dropped).
pub async fn connect(url: &str) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driven = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, driven)
}

/// Runs `sql` on a bare connection to `url`.
pub async fn execute(url: &str, sql: &str) {
    let (client, driven) = connect(url).await;
    client.batch_execute(sql).await.unwrap();
    drop(client);
    let _ = driven.await;
}

/// A running cluster.
pub struct Cluster {
    _dir: tempfile::TempDir,
    data: PathBuf,
    bin: PathBuf,
    user: Option<&'static str>,
    /// The loopback port, with TLS ([`Cluster::start_tls`]).
    port: Option<u16>,
}

/// The folder holding `initdb`, `pg_ctl` and `postgres`: on `PATH`, else Debian's.
fn binaries() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    // The newest version installed (by number: 16 after 9.6).
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let version = path
                .file_name()?
                .to_str()?
                .split('.')
                .map(|part| part.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((version, path.join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

impl Cluster {
    /// Starts a cluster; `None` (the caller skips) when PostgreSQL is not installed and not
    /// required.
    pub fn start() -> Option<Cluster> {
        Cluster::start_with(false)
    }

    /// [`Cluster::start`], also listening on a loopback port that speaks TLS, with a
    /// certificate for `localhost` that [`Cluster::certificate`] holds (self-signed, made by
    /// `openssl`).
    pub fn start_tls() -> Option<Cluster> {
        Cluster::start_with(true)
    }

    /// The PEM file of the TLS port's certificate (its own authority).
    pub fn certificate(&self) -> PathBuf {
        self.data
            .parent()
            .unwrap_or(Path::new("/"))
            .join("server.crt")
    }

    /// A connection string for database `name` over the TLS port, with `sslmode` and, when
    /// given, `sslrootcert`.
    pub fn tcp_url(&self, name: &str, sslmode: &str, roots: Option<&Path>) -> String {
        let port = self.port.unwrap_or(5432);
        let mut url = format!("postgres://toolgate@localhost:{port}/{name}?sslmode={sslmode}");
        if let Some(roots) = roots {
            url.push_str(&format!("&sslrootcert={}", roots.display()));
        }
        url
    }

    fn start_with(tls: bool) -> Option<Cluster> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var_os("TOOLGATE_REQUIRE_POSTGRES").is_none(),
                "TOOLGATE_REQUIRE_POSTGRES is set but PostgreSQL (initdb, pg_ctl) is not installed"
            );
            eprintln!("skipped: PostgreSQL (initdb, pg_ctl) is not installed");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let uid = |name: Option<&str>| -> u32 {
            let output = Command::new("id").arg("-u").args(name).output().unwrap();
            String::from_utf8_lossy(&output.stdout)
                .trim()
                .parse()
                .unwrap()
        };
        let root = uid(None) == 0;
        let user = root.then_some("nobody");
        if root {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
            std::os::unix::fs::chown(&data, Some(uid(Some("nobody"))), None).unwrap();
        }
        let port = tls.then(|| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        });
        let cluster = Cluster {
            _dir: dir,
            data,
            bin,
            user,
            port,
        };
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "toolgate",
                "-E",
                "UTF8",
                "--locale",
                "C.UTF-8",
                "--no-sync",
            ],
        );
        let mut options = format!(
            "-k {} -c listen_addresses='' -c max_connections=200 -c fsync=on",
            cluster.data.display()
        );
        if let Some(port) = cluster.port {
            let (key, certificate) = (
                cluster.data.join("server.key"),
                cluster.data.join("server.crt"),
            );
            let authority = cluster.certificate();
            let authority_key = cluster.data.join("authority.key");
            let openssl = |args: &[&str], subject: &str| {
                let made = Command::new("openssl")
                    .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
                    .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
                    .args(["-subj", subject])
                    .args(args)
                    .output()
                    .unwrap();
                assert!(
                    made.status.success(),
                    "{}",
                    String::from_utf8_lossy(&made.stderr)
                );
            };
            let path = |path: &Path| path.display().to_string();
            // An authority, and the server's certificate it signs (a self-signed certificate
            // is an authority, which TLS clients refuse as a server's own).
            openssl(
                &["-keyout", &path(&authority_key), "-out", &path(&authority)],
                "/CN=toolgate test authority",
            );
            openssl(
                &[
                    "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-addext",
                    "basicConstraints=critical,CA:FALSE",
                    "-CA",
                    &path(&authority),
                    "-CAkey",
                    &path(&authority_key),
                    "-keyout",
                    &path(&key),
                    "-out",
                    &path(&certificate),
                ],
                "/CN=localhost",
            );
            if cluster.user.is_some() {
                use std::os::unix::fs::PermissionsExt;
                let nobody = Command::new("id").args(["-u", "nobody"]).output().unwrap();
                let nobody: u32 = String::from_utf8_lossy(&nobody.stdout)
                    .trim()
                    .parse()
                    .unwrap();
                std::os::unix::fs::chown(&key, Some(nobody), None).unwrap();
                std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
                std::fs::set_permissions(&certificate, std::fs::Permissions::from_mode(0o644))
                    .unwrap();
            }
            options = format!(
                "-k {} -c listen_addresses='127.0.0.1' -c port={port} -c max_connections=200 \
                 -c fsync=on -c ssl=on -c ssl_cert_file='{}' -c ssl_key_file='{}'",
                cluster.data.display(),
                certificate.display(),
                key.display()
            );
        }
        cluster.run(
            "pg_ctl",
            &[
                "-D",
                &cluster.data.display().to_string(),
                "-o",
                &options,
                "-l",
                &cluster.data.join("server.log").display().to_string(),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        cluster.watch();
        Some(cluster)
    }

    /// Stops the cluster and removes its folder if this process is killed before it can (a
    /// shell that looks every second whether this process is still there).
    fn watch(&self) {
        let stop = format!(
            "{} '{}' -D '{}' -m immediate -w -t 30 stop",
            if self.user.is_some() {
                "runuser -u nobody --"
            } else {
                ""
            },
            self.bin.join("pg_ctl").display(),
            self.data.display()
        );
        let folder = self.data.parent().unwrap_or(Path::new("/nonexistent"));
        let script = format!(
            "while kill -0 {} 2>/dev/null; do sleep 1; done; \
             if [ -e '{}/postmaster.pid' ]; then {stop} >/dev/null 2>&1; rm -rf '{}'; fi",
            std::process::id(),
            self.data.display(),
            folder.display()
        );
        let _ = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }

    fn run(&self, program: &str, args: &[&str]) {
        let program = self.bin.join(program);
        let mut command = match self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&program);
                command
            }
            None => Command::new(&program),
        };
        let output = command
            .args(args)
            .current_dir(self.data.parent().unwrap_or(Path::new("/")))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{} {args:?}: {}\n{}\nserver log: {}",
            program.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.data.join("server.log")).unwrap_or_default()
        );
    }

    /// [`Cluster::start`], with a new database `name` made on it (from code that has no
    /// runtime of its own): the cluster and the database's connection string.
    pub fn with_database(name: &str) -> Option<(Cluster, String)> {
        let cluster = Cluster::start()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let url = runtime.block_on(cluster.create(name));
        Some((cluster, url))
    }

    /// A connection string for database `name` (which [`Cluster::create`] made).
    pub fn url(&self, name: &str) -> String {
        format!(
            "host={} port={} user=toolgate dbname={name}",
            self.data.display(),
            self.port.unwrap_or(5432)
        )
    }

    /// Makes a new, empty database; returns its connection string.
    pub async fn create(&self, name: &str) -> String {
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .unwrap();
        let connection = tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap();
        drop(client);
        let _ = connection.await;
        self.url(name)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Immediate: the test is over, nothing needs to reach the disk.
        let program = self.bin.join("pg_ctl");
        let data = self.data.display().to_string();
        let args = [
            "-D",
            data.as_str(),
            "-m",
            "immediate",
            "-w",
            "-t",
            "30",
            "stop",
        ];
        let _ = match self.user {
            Some(user) => Command::new("runuser")
                .args(["-u", user, "--"])
                .arg(&program)
                .args(args)
                .output(),
            None => Command::new(&program).args(args).output(),
        };
    }
}
