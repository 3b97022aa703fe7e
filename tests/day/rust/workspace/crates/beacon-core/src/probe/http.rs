use std::time::Duration;

use crate::error::{Error, Result};

/// Runs an HTTP probe.
///
/// - sends a `GET` with the check's timeout
/// - follows at most 3 redirects
/// and reports `Down` unless the final status equals `expect_status`.
pub(crate) async fn probe(
    client: &reqwest::Client,
    url: &str,
    expect_status: u16,
    timeout: Duration,
) -> Result<()> {
    let resp = client
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| Error::Probe(e.to_string()))?;
    let got = resp.status().as_u16();
    if got == expect_status {
        Ok(())
    } else {
        Err(Error::Probe(format!("expected {expect_status}, got {got}")))
    }
}
