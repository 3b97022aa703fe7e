use std::io::{self, Write};

use beacon_core::{CheckId, Outcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

pub fn print(rows: &[(CheckId, Outcome)], format: Format) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match format {
        Format::Table => print_table(&mut out, rows),
        Format::Json => print_json(&mut out, rows),
    }
}

fn print_table(out: &mut impl Write, rows: &[(CheckId, Outcome)]) -> io::Result<()> {
    writeln!(out, "{:<20} {:<6} DETAIL", "CHECK", "STATE")?;
    for (id, outcome) in rows {
        let (state, detail) = match outcome {
            Outcome::Up { latency_ms } => ("up", format!("{latency_ms} ms")),
            Outcome::Down { reason } => ("down", reason.clone()),
            Outcome::Unknown => ("?", String::new()),
        };
        writeln!(out, "{:<20} {:<6} {}", id, state, detail)?;
    }
    Ok(())
}

fn print_json(out: &mut impl Write, rows: &[(CheckId, Outcome)]) -> io::Result<()> {
    let value: Vec<_> = rows
        .iter()
        .map(|(id, outcome)| serde_json::json!({ "id": id, "outcome": outcome }))
        .collect();
    serde_json::to_writer_pretty(&mut *out, &value)?;
    writeln!(out)
}
