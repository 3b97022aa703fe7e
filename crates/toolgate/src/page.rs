//! `toolgate page`: a fresh address that signs the approval page in once.

use std::io::Write;

use clap::Args;
use serde_json::json;

use crate::client::{Client, ClientArgs, field};
use crate::{EXIT_OK, Failure};

/// Prints a new address that signs the approval page in once (the one `toolgate serve` printed
/// is spent after one use, and expires)
#[derive(Debug, Args)]
pub(crate) struct PageArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
    /// Print JSON (`url`, `expires_in` seconds) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &PageArgs) -> Result<u8, Failure> {
    let client = Client::new(&args.client)?;
    let reply = client.send("POST", "/api/login/codes", None)?;
    if reply.status != 201 {
        return Err(reply.failure(args.json));
    }
    // A code goes into an address: hex only, whatever answered.
    let code = field(&reply.body, "code")
        .as_str()
        .filter(|code| !code.is_empty() && code.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| Failure::Message("the daemon's answer has no sign-in code".into()))?;
    let expires = field(&reply.body, "expires_in").as_u64().unwrap_or(0);
    let url = format!("http://{}/#login={code}", client.host());
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", json!({"url": url, "expires_in": expires}))?;
    } else {
        writeln!(out, "open the approval page: {url}")?;
        writeln!(
            out,
            "  (that address signs you in once, within {} minutes)",
            expires.div_ceil(60)
        )?;
    }
    Ok(EXIT_OK)
}
