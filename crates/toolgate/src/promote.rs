//! `toolgate grants promote ID`: from a remembered answer to a rule (see
//! `toolgate_server::promote`: which file, where in it, the checks). The diff is shown; with
//! `--yes` the file is written and the grant revoked (the daemon, watching its policy files,
//! loads the new rule by itself). The project of a session's grant is the current folder's, or
//! `--policy FILE`.

use std::io::Write;
use std::path::Path;

use serde_json::Value;
use toolgate_runtime::{Grant, terminal_text};
use toolgate_server::promote;

use crate::client::{Client, field};
use crate::{EXIT_FAILED, EXIT_OK, Failure};

/// What `promote` was asked.
pub(crate) struct Promotion<'a> {
    /// The grant (whole, as the daemon lists it).
    pub(crate) grant: &'a Value,
    /// The file to write, when given.
    pub(crate) policy: Option<&'a Path>,
    /// Write it (else show what would be written).
    pub(crate) yes: bool,
    /// Who revokes the grant, as the audit log says it.
    pub(crate) by: &'a str,
}

pub(crate) fn promote(client: &Client, asked: &Promotion<'_>) -> Result<u8, Failure> {
    let mut out = std::io::stdout().lock();
    let grant: Grant = serde_json::from_value(asked.grant.clone()).map_err(|e| {
        Failure::Message(format!(
            "the daemon listed a grant this toolgate cannot read: {e}"
        ))
    })?;
    let file = match asked.policy {
        Some(file) => file.to_owned(),
        None => promote::file_for(&grant, Some(&crate::args::current_folder()?))
            .map_err(|why| Failure::Message(format!("{why} (--policy FILE)")))?,
    };
    let example = example_of(client, &grant)?;
    let plan = promote::plan(&grant, &file, example.as_ref()).map_err(Failure::Message)?;
    for line in plan.diff().lines() {
        writeln!(out, "{}", terminal_text(line))?;
    }
    for name in &plan.superseded {
        writeln!(
            out,
            "(rule `{}` asks no more for what the new rule covers: lint will say it never \
             applies; remove it, or narrow it)",
            terminal_text(name)
        )?;
    }
    if !plan.example {
        writeln!(
            out,
            "(the call that made the grant is no longer in the log: the rule has no example)"
        )?;
    }
    if !asked.yes {
        writeln!(out, "not written: --yes writes it and revokes the grant")?;
        return Ok(EXIT_OK);
    }
    // (No backup: the diff was shown.)
    crate::install::replace_file(&file, None, Some(&plan.new))?;
    let name = file.display().to_string();
    let path = format!(
        "/api/grants/{}?by={}",
        crate::client::encode(&grant.id),
        crate::client::encode(asked.by)
    );
    let reply = client.send("DELETE", &path, None)?;
    match reply.status {
        204 => {
            writeln!(
                out,
                "wrote {name}; revoked grant {}",
                terminal_text(&grant.id)
            )?;
            Ok(EXIT_OK)
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "wrote {name}, but the grant was not revoked: {}",
                reply.error()
            );
            Ok(EXIT_FAILED)
        }
    }
}

/// The call that made the grant, from its request's `permission_requested` event: `{tool,
/// args}`; `None` when the log no longer holds it.
fn example_of(client: &Client, grant: &Grant) -> Result<Option<Value>, Failure> {
    let Some(request) = &grant.request_id else {
        return Ok(None);
    };
    let path = format!(
        "/api/audit?type=permission_requested&request_id={}&limit=1",
        crate::client::encode(request)
    );
    let reply = client.send("GET", &path, None)?;
    if reply.status != 200 {
        return Err(reply.failure(false));
    }
    Ok(field(&reply.body, "events")
        .as_array()
        .and_then(|events| events.first())
        .and_then(promote::example_from))
}
