use std::time::Duration;

use tokio::net::TcpStream;

use crate::error::{Error, Result};

pub(crate) async fn probe(host: &str, port: u16, timeout: Duration) -> Result<()> {
    let connect = TcpStream::connect((host, port));
    match tokio::time::timeout(timeout, connect).await {
        Ok(Ok(_stream)) => Ok(()),
        Ok(Err(e)) => Err(Error::Probe(format!("{host}:{port}: {e}"))),
        Err(_) => Err(Error::Probe(format!("{host}:{port}: timed out after {timeout:?}"))),
    }
}

#[cfg(feature = "tls")]
pub(crate) async fn probe_tls(host: &str, port: u16, timeout: Duration) -> Result<()> {
    // TLS handshake probe, behind a feature until rustls-connector lands.
    probe(host, port, timeout).await
}
